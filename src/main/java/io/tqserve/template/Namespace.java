package io.tqserve.template;

import java.util.LinkedHashMap;
import java.util.Map;

/** Jinja2's {@code namespace()}: the one object whose attributes {@code {% set ns.x = ... %}} may assign. */
final class Namespace {
    final Map<String, Object> attributes = new LinkedHashMap<>();

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("<Namespace {");
        boolean first = true;
        for (Map.Entry<String, Object> e : attributes.entrySet()) {
            b.append(first ? "" : ", ").append(Py.repr(e.getKey())).append(": ").append(Py.repr(e.getValue()));
            first = false;
        }
        return b.append("}>").toString();
    }
}
