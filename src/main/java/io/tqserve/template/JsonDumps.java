package io.tqserve.template;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Python's {@code json.dumps(x, ensure_ascii=False, indent=..., separators=..., sort_keys=...)}, the body of
 * transformers' {@code tojson} filter: default separators {@code ", "}/{@code ": "} (or {@code ","} with an
 * indent), non-ASCII kept, control characters escaped as {@code \\uXXXX}, floats in Python's repr.
 */
final class JsonDumps {
    private final String indent;
    private final String itemSeparator;
    private final String keySeparator;
    private final boolean sortKeys;
    private final boolean ensureAscii;

    JsonDumps(Object indent, Object separators, boolean sortKeys, boolean ensureAscii) {
        this.indent = indent == null ? null : indent instanceof String s ? s : " ".repeat((int) Py.integer(indent));
        if (separators instanceof List<?> l && l.size() == 2) {
            this.itemSeparator = (String) l.get(0);
            this.keySeparator = (String) l.get(1);
        } else {
            this.itemSeparator = this.indent == null ? ", " : ",";
            this.keySeparator = ": ";
        }
        this.sortKeys = sortKeys;
        this.ensureAscii = ensureAscii;
    }

    String dumps(Object value) {
        StringBuilder out = new StringBuilder();
        write(value, out, 0);
        return out.toString();
    }

    private void write(Object v, StringBuilder out, int level) {
        switch (v) {
            case null -> out.append("null");
            case Boolean b -> out.append(b ? "true" : "false");
            case Long l -> out.append(l);
            case Double d -> out.append(Double.isNaN(d) ? "NaN" : Double.isInfinite(d) ? (d > 0 ? "Infinity"
                    : "-Infinity") : PyText.floatRepr(d));
            case String s -> string(s, out);
            case Markup m -> string(m.text(), out);
            case List<?> l -> {
                if (l.isEmpty()) {
                    out.append("[]");
                    return;
                }
                out.append('[');
                for (int i = 0; i < l.size(); i++) {
                    out.append(i > 0 ? itemSeparator : "");
                    newline(out, level + 1);
                    write(l.get(i), out, level + 1);
                }
                newline(out, level);
                out.append(']');
            }
            case Map<?, ?> m -> {
                if (m.isEmpty()) {
                    out.append("{}");
                    return;
                }
                List<Map.Entry<?, ?>> entries = new ArrayList<>(m.entrySet());
                if (sortKeys) {
                    entries.sort((a, b) -> Py.compare(a.getKey(), b.getKey(), "<"));
                }
                out.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : entries) {
                    out.append(first ? "" : itemSeparator);
                    first = false;
                    newline(out, level + 1);
                    string(key(e.getKey()), out);
                    out.append(keySeparator);
                    write(e.getValue(), out, level + 1);
                }
                newline(out, level);
                out.append('}');
            }
            default -> throw RenderException.type("Object of type " + Py.typeName(v) + " is not JSON serializable");
        }
    }

    private static String key(Object k) {
        return switch (k) {
            case String s -> s;
            case null -> "null";
            case Boolean b -> b ? "true" : "false";
            case Long l -> l.toString();
            case Double d -> PyText.floatRepr(d);
            default -> throw RenderException.type("keys must be str, int, float, bool or None, not "
                    + Py.typeName(k));
        };
    }

    private void newline(StringBuilder out, int level) {
        if (indent != null) {
            out.append('\n').append(indent.repeat(level));
        }
    }

    private void string(String s, StringBuilder out) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                default -> {
                    if (c < 0x20 || (ensureAscii && c > 0x7e)) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }
}
