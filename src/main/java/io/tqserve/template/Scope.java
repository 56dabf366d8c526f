package io.tqserve.template;

import java.util.HashMap;
import java.util.Map;

/**
 * A frame of template variables. As in Jinja2, {@code for} iterations, macro calls and {@code with} blocks open a
 * frame (a {@code set} inside them does not leak out), while {@code if} does not.
 */
final class Scope {
    private final Scope parent;
    private final Map<String, Object> vars;

    Scope(Scope parent) {
        this(parent, new HashMap<>(8));
    }

    Scope(Scope parent, Map<String, Object> vars) {
        this.parent = parent;
        this.vars = vars;
    }

    /** The variable's value, or {@link Py#MISSING}. */
    Object lookup(String name) {
        for (Scope s = this; s != null; s = s.parent) {
            Object v = s.vars.get(name);
            if (v != null || s.vars.containsKey(name)) {
                return v;
            }
        }
        return Py.MISSING;
    }

    void set(String name, Object value) {
        vars.put(name, value);
    }
}
