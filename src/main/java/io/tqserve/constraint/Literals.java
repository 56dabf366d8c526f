package io.tqserve.constraint;

import java.util.List;
import java.util.Map;

/** Compact JSON text of plain Java values (the values of {@code enum} and {@code const}). */
final class Literals {
    private Literals() {
    }

    static String json(Object v) {
        StringBuilder sb = new StringBuilder();
        write(v, sb);
        return sb.toString();
    }

    private static void write(Object v, StringBuilder sb) {
        switch (v) {
            case null -> sb.append("null");
            case String s -> sb.append(JsonLexemes.quote(s));
            case Boolean b -> sb.append(b);
            case Number n -> {
                String s = n.toString();
                if (s.contains("E") || s.contains("e") || s.equals("NaN") || s.contains("Infinity")) {
                    s = new java.math.BigDecimal(s).toPlainString();
                }
                sb.append(s);
            }
            case List<?> l -> {
                sb.append('[');
                for (int i = 0; i < l.size(); i++) {
                    if (i > 0) {
                        sb.append(',');
                    }
                    write(l.get(i), sb);
                }
                sb.append(']');
            }
            case Map<?, ?> m -> {
                sb.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    if (!first) {
                        sb.append(',');
                    }
                    first = false;
                    sb.append(JsonLexemes.quote(String.valueOf(e.getKey()))).append(':');
                    write(e.getValue(), sb);
                }
                sb.append('}');
            }
            default -> throw new UnsupportedSchemaException("enum", "unsupported value " + v);
        }
    }
}
