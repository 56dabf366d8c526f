package io.tqserve.model;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.AbstractList;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * Python's text forms of template values, which no Java library reproduces:
 * <ul>
 *   <li>{@code json.dumps(x, ensure_ascii=False, indent=..., separators=..., sort_keys=...)} byte for byte — the
 *       {@code tojson} filter Hugging Face installs for chat templates. Jinjava's own {@code tojson} uses Jackson,
 *       whose output differs ({@code {"a":1}} instead of {@code {"a": 1}}, {@code 1.0E20} instead of
 *       {@code 1e+20}), and a tool schema rendered differently is a different prompt;</li>
 *   <li>{@code str(x)} as <code>{{ x }}</code> prints it: {@code True}, {@code 0.5}, {@code 1e+20},
 *       {@code ['a', None]} where Jinjava prints {@code true}, {@code 1.0E20}, {@code ['a', null]}.</li>
 * </ul>
 */
final class PythonValues {

    private final String indent;        // null: single line
    private final String itemSeparator;
    private final String keySeparator;
    private final boolean sortKeys;

    /**
     * @param indent     Python's {@code indent}: null, a number of spaces or a string
     * @param separators Python's {@code (item_separator, key_separator)} or null for the default
     */
    PythonValues(Object indent, List<?> separators, boolean sortKeys) {
        this.indent = switch (indent) {
            case null -> null;
            case Number n -> " ".repeat(Math.max(0, n.intValue()));
            case String s -> s;
            default -> throw new IllegalArgumentException("tojson indent must be a number or a string");
        };
        if (separators != null) {
            if (separators.size() != 2) {
                throw new IllegalArgumentException("tojson separators must be a pair of strings");
            }
            this.itemSeparator = String.valueOf(separators.get(0));
            this.keySeparator = String.valueOf(separators.get(1));
        } else {
            this.itemSeparator = this.indent == null ? ", " : ",";
            this.keySeparator = ": ";
        }
        this.sortKeys = sortKeys;
    }

    static String dumps(Object value) {
        return new PythonValues(null, null, false).write(value);
    }

    String write(Object value) {
        StringBuilder out = new StringBuilder();
        write(value, out, 0);
        return out.toString();
    }

    private void write(Object value, StringBuilder out, int depth) {
        switch (value) {
            case null -> out.append("null");
            case String s -> quote(s, out);
            case CharSequence cs -> quote(cs.toString(), out);
            case Character c -> quote(c.toString(), out);
            case Boolean b -> out.append(b ? "true" : "false");
            case Float f -> out.append(floatRepr(f.doubleValue()));
            case Double d -> out.append(floatRepr(d));
            case BigDecimal d -> out.append(floatRepr(d.doubleValue()));
            case Number n -> out.append(n instanceof BigInteger ? n.toString() : Long.toString(n.longValue()));
            case Map<?, ?> map -> writeMap(map, out, depth);
            case Iterable<?> items -> writeList(items, out, depth);
            case Object[] items -> writeList(List.of(items), out, depth);
            default -> throw new IllegalArgumentException("Object of type " + value.getClass().getSimpleName()
                    + " is not JSON serializable");
        }
    }

    private void writeMap(Map<?, ?> map, StringBuilder out, int depth) {
        if (map.isEmpty()) {
            out.append("{}");
            return;
        }
        List<Map.Entry<String, Object>> entries = new ArrayList<>();
        for (Map.Entry<?, ?> e : map.entrySet()) {
            entries.add(Map.entry(key(e.getKey()), e.getValue() == null ? NULL : e.getValue()));
        }
        if (sortKeys) {
            entries.sort(Comparator.comparing(Map.Entry::getKey));
        }
        out.append('{');
        boolean first = true;
        for (Map.Entry<String, Object> e : entries) {
            separate(out, depth + 1, first);
            first = false;
            quote(e.getKey(), out);
            out.append(keySeparator);
            write(e.getValue() == NULL ? null : e.getValue(), out, depth + 1);
        }
        close(out, depth, '}');
    }

    private static final Object NULL = new Object();   // Map.entry refuses null values

    private void writeList(Iterable<?> items, StringBuilder out, int depth) {
        if (!items.iterator().hasNext()) {
            out.append("[]");
            return;
        }
        out.append('[');
        boolean first = true;
        for (Object item : items) {
            separate(out, depth + 1, first);
            first = false;
            write(item, out, depth + 1);
        }
        close(out, depth, ']');
    }

    private void separate(StringBuilder out, int depth, boolean first) {
        if (!first) {
            out.append(itemSeparator);
        }
        if (indent != null) {
            out.append('\n').append(indent.repeat(depth));
        }
    }

    private void close(StringBuilder out, int depth, char bracket) {
        if (indent != null) {
            out.append('\n').append(indent.repeat(depth));
        }
        out.append(bracket);
    }

    /** Python converts str, int, float, bool and None keys to strings; anything else is a TypeError. */
    private static String key(Object key) {
        return switch (key) {
            case null -> "null";
            case String s -> s;
            case Boolean b -> b ? "true" : "false";
            case Double d -> floatRepr(d);
            case Float f -> floatRepr(f.doubleValue());
            case Number n -> n.toString();
            default -> throw new IllegalArgumentException("keys must be str, int, float, bool or None, not "
                    + key.getClass().getSimpleName());
        };
    }

    /** {@code json.dumps} string escaping with {@code ensure_ascii=False}. */
    static void quote(String s, StringBuilder out) {
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
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }

    /**
     * Python's {@code repr(float)}: the shortest digits that round-trip (Java's {@link Double#toString} picks the
     * same digits since JDK 19), in positional notation when the decimal exponent is in [-4, 16), else
     * {@code d.ddde+XX}; json.dumps writes NaN and the infinities as {@code NaN}, {@code Infinity}.
     */
    static String floatRepr(double d) {
        if (Double.isNaN(d)) {
            return "NaN";
        }
        if (Double.isInfinite(d)) {
            return d > 0 ? "Infinity" : "-Infinity";
        }
        if (d == 0) {
            return (1 / d < 0) ? "-0.0" : "0.0";
        }
        BigDecimal exact = new BigDecimal(Double.toString(Math.abs(d))).stripTrailingZeros();
        String digits = exact.unscaledValue().toString();
        int decpt = digits.length() - exact.scale();   // value = 0.digits * 10^decpt
        if (digits.length() == 2) {
            // Java prints at least two significant digits (4.9E-324); Python one when one round-trips (5e-324),
            // choosing the one nearest the exact value.
            BigDecimal value = new BigDecimal(Math.abs(d));
            BigDecimal best = null;
            for (int lead = digits.charAt(0) - '0'; lead <= digits.charAt(0) - '0' + 1; lead++) {
                BigDecimal candidate = BigDecimal.valueOf(lead).scaleByPowerOfTen(decpt - 1);
                if (candidate.doubleValue() == Math.abs(d) && (best == null
                        || candidate.subtract(value).abs().compareTo(best.subtract(value).abs()) < 0)) {
                    best = candidate;
                }
            }
            if (best != null) {
                best = best.stripTrailingZeros();
                digits = best.unscaledValue().toString();
                decpt = digits.length() - best.scale();
            }
        }
        StringBuilder out = new StringBuilder(d < 0 ? "-" : "");
        if (decpt > -4 && decpt <= 16) {
            if (decpt <= 0) {
                out.append("0.").append("0".repeat(-decpt)).append(digits);
            } else if (decpt >= digits.length()) {
                out.append(digits).append("0".repeat(decpt - digits.length())).append(".0");
            } else {
                out.append(digits, 0, decpt).append('.').append(digits, decpt, digits.length());
            }
        } else {
            out.append(digits.charAt(0));
            if (digits.length() > 1) {
                out.append('.').append(digits, 1, digits.length());
            }
            int exponent = decpt - 1;
            out.append('e').append(exponent < 0 ? '-' : '+');
            int abs = Math.abs(exponent);
            out.append(abs < 10 ? "0" : "").append(abs);
        }
        return out.toString();
    }

    /** An immutable Python tuple: a list to Jinjava (indexable, unpackable in loops), printed {@code (a, b)}. */
    static final class Tuple extends AbstractList<Object> {
        private final Object[] items;

        Tuple(Object... items) {
            this.items = items.clone();
        }

        @Override
        public Object get(int index) {
            return items[index];
        }

        @Override
        public int size() {
            return items.length;
        }
    }

    /**
     * {@code str(value)} for <code>{{ value }}</code>, or null for a type Jinjava should print itself. Null prints as
     * the empty string: Jinjava does not tell Jinja2's Undefined (printed empty) from None.
     */
    static String str(Object value) {
        return switch (value) {
            case null -> "";
            case String s -> s;
            case Character c -> c.toString();
            case Boolean b -> b ? "True" : "False";
            case Double d -> floatRepr(d);
            case Float f -> floatRepr(f.doubleValue());
            case Map<?, ?> map -> repr(map);
            case Map.Entry<?, ?> item -> repr(item);
            case Collection<?> items -> repr(items);
            default -> null;
        };
    }

    /** {@code repr(value)}, as Python prints items inside a list or dict. */
    static String repr(Object value) {
        StringBuilder out = new StringBuilder();
        repr(value, out);
        return out.toString();
    }

    private static void repr(Object value, StringBuilder out) {
        switch (value) {
            case null -> out.append("None");
            case String s -> reprString(s, out);
            case Character c -> reprString(c.toString(), out);
            case Boolean b -> out.append(b ? "True" : "False");
            case Double d -> out.append(floatRepr(d));
            case Float f -> out.append(floatRepr(f.doubleValue()));
            case Map.Entry<?, ?> e -> repr(new Tuple(e.getKey(), e.getValue()), out);   // a dict item
            case Tuple t -> {
                out.append('(');
                for (int i = 0; i < t.size(); i++) {
                    out.append(i == 0 ? "" : ", ");
                    repr(t.get(i), out);
                }
                out.append(t.size() == 1 ? ",)" : ")");
            }
            case Map<?, ?> map -> {
                out.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : map.entrySet()) {
                    out.append(first ? "" : ", ");
                    first = false;
                    repr(e.getKey(), out);
                    out.append(": ");
                    repr(e.getValue(), out);
                }
                out.append('}');
            }
            case Collection<?> items -> {
                out.append('[');
                boolean first = true;
                for (Object item : items) {
                    out.append(first ? "" : ", ");
                    first = false;
                    repr(item, out);
                }
                out.append(']');
            }
            default -> out.append(value);
        }
    }

    /** Python's {@code repr(str)}: single quotes unless the text has ' and no ", escapes for unprintables. */
    private static void reprString(String s, StringBuilder out) {
        char quote = s.indexOf('\'') >= 0 && s.indexOf('"') < 0 ? '"' : '\'';
        out.append(quote);
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            if (cp == quote || cp == '\\') {
                out.append('\\').appendCodePoint(cp);
            } else if (cp == '\t') {
                out.append("\\t");
            } else if (cp == '\n') {
                out.append("\\n");
            } else if (cp == '\r') {
                out.append("\\r");
            } else if (cp == ' ' || isPrintable(cp)) {
                out.appendCodePoint(cp);
            } else if (cp < 0x100) {
                out.append(String.format("\\x%02x", cp));
            } else if (cp < 0x10000) {
                out.append(String.format("\\u%04x", cp));
            } else {
                out.append(String.format("\\U%08x", cp));
            }
        }
        out.append(quote);
    }

    /** Python's {@code str.isprintable()} for one code point (other than the space). */
    private static boolean isPrintable(int cp) {
        return switch (Character.getType(cp)) {
            case Character.CONTROL, Character.FORMAT, Character.SURROGATE, Character.PRIVATE_USE,
                 Character.UNASSIGNED, Character.LINE_SEPARATOR, Character.PARAGRAPH_SEPARATOR,
                 Character.SPACE_SEPARATOR -> false;
            default -> true;
        };
    }
}
