package io.tqserve.constraint;

import dk.brics.automaton.Automaton;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.Map;

/**
 * The automata (dk.brics, chars 0..255 standing for bytes) of bounded integers and numbers and of string formats;
 * {@link SchemaCompiler} turns them into lexemes. Numbers have at most {@link #MAX_INT_DIGITS} integer and
 * {@link #MAX_FRACTION_DIGITS} fraction digits.
 */
final class Scalars {
    private static final long MAX_15_DIGITS = 999_999_999_999_999L;
    /** Most integer digits of a bounded number (10^15 is still exact in a double). */
    static final int MAX_INT_DIGITS = 15;
    /** Most fraction digits of a number. */
    static final int MAX_FRACTION_DIGITS = 15;

    private Scalars() {
    }

    static Automaton range(int from, int to) {
        return Automaton.makeCharRange((char) from, (char) to);
    }

    static Automaton seq(Automaton... parts) {
        return Automaton.concatenate(java.util.List.of(parts));
    }

    static Automaton any(Automaton... parts) {
        return Automaton.union(java.util.List.of(parts));
    }

    static Automaton digits(int min, int max) {
        return range('0', '9').repeat(min, max);
    }

    /** Digits of a non-negative integer without leading zeros, at most {@code maxDigits} long. */
    static Automaton natural(int maxDigits) {
        return any(Automaton.makeChar('0'), seq(range('1', '9'), digits(0, maxDigits - 1)));
    }

    /** The contents (between the quotes) of a string of a supported format, or null if the format is unknown. */
    static Automaton format(String format) {
        Automaton hex = any(range('0', '9'), range('a', 'f'));
        Automaton dash = Automaton.makeChar('-');
        return switch (format) {
            case "uuid" -> seq(hex.repeat(8, 8), dash, hex.repeat(4, 4), dash, hex.repeat(4, 4), dash,
                    hex.repeat(4, 4), dash, hex.repeat(12, 12));
            default -> null;
        };
    }

    static Automaton integer(Map<?, ?> m, String at) {
        long lo = -MAX_15_DIGITS;
        long hi = MAX_15_DIGITS;
        Object format = m.get("format");
        if ("int32".equals(format)) {
            lo = Integer.MIN_VALUE;
            hi = Integer.MAX_VALUE;
        } else if (format != null && !"int64".equals(format)) {
            throw new UnsupportedSchemaException("format", "integer format '" + format + "' (at " + at
                    + ") is not supported (supported: int32, int64)");
        }
        if (m.containsKey("minimum")) {
            lo = Math.max(lo, bound(SchemaCompiler.decimal(m.get("minimum"), "minimum", at), RoundingMode.CEILING));
        }
        if (m.containsKey("exclusiveMinimum")) {
            BigDecimal x = SchemaCompiler.decimal(m.get("exclusiveMinimum"), "exclusiveMinimum", at);
            lo = Math.max(lo, bound(x, RoundingMode.FLOOR) + 1);
        }
        if (m.containsKey("maximum")) {
            hi = Math.min(hi, bound(SchemaCompiler.decimal(m.get("maximum"), "maximum", at), RoundingMode.FLOOR));
        }
        if (m.containsKey("exclusiveMaximum")) {
            BigDecimal x = SchemaCompiler.decimal(m.get("exclusiveMaximum"), "exclusiveMaximum", at);
            hi = Math.min(hi, bound(x, RoundingMode.CEILING) - 1);
        }
        if (lo > hi) {
            throw new UnsupportedSchemaException("minimum", "no integer satisfies the bounds at " + at);
        }
        return integerRange(lo, hi);
    }

    private static long bound(BigDecimal x, RoundingMode mode) {
        BigDecimal r = x.setScale(0, mode);
        BigDecimal cap = BigDecimal.valueOf(MAX_15_DIGITS);
        return r.max(cap.negate()).min(cap).longValueExact();
    }

    /**
     * Integers in [lo, hi] written without leading zeros (and never as -0): a regular expression of digit ranges,
     * linear in the number of digits (built by splitting the range per length and per leading digit; the automaton
     * of {@code Automaton.makeMinInteger/makeMaxInteger} costs a hundred times more to minimize).
     */
    static Automaton integerRange(long lo, long hi) {
        StringBuilder re = new StringBuilder();
        if (hi >= 0) {
            naturals(Math.max(lo, 0), hi, re);
        }
        if (lo < 0) {
            StringBuilder neg = new StringBuilder();
            naturals(Math.max(1, -Math.min(hi, -1)), -lo, neg);
            if (!re.isEmpty()) {
                re.append('|');
            }
            re.append("-(").append(neg).append(')');
        }
        Automaton a = new dk.brics.automaton.RegExp(re.toString(), dk.brics.automaton.RegExp.NONE).toAutomaton();
        a.minimize();
        return a;
    }

    /** Appends a regex of the naturals in [a, b] (a &lt;= b) without leading zeros. */
    private static void naturals(long a, long b, StringBuilder re) {
        String sa = Long.toString(a);
        String sb = Long.toString(b);
        boolean first = true;
        for (int len = sa.length(); len <= sb.length(); len++) {
            long from = len == sa.length() ? a : pow10(len - 1);
            long to = len == sb.length() ? b : pow10(len) - 1;
            if (from > to) {
                continue;
            }
            if (!first) {
                re.append('|');
            }
            first = false;
            re.append('(');
            sameLength(Long.toString(from), Long.toString(to), re);
            re.append(')');
        }
    }

    private static long pow10(int n) {
        long p = 1;
        for (int i = 0; i < n; i++) {
            p *= 10;
        }
        return p;
    }

    /** Appends a regex of the digit strings of x's length between x and y (x &lt;= y). */
    private static void sameLength(String x, String y, StringBuilder re) {
        int n = x.length();
        if (n == 0) {
            return;
        }
        if (x.chars().allMatch(c -> c == '0') && y.chars().allMatch(c -> c == '9')) {
            re.append("[0-9]{").append(n).append('}');
            return;
        }
        char x0 = x.charAt(0);
        char y0 = y.charAt(0);
        if (n == 1) {
            re.append('[').append(x0).append('-').append(y0).append(']');
            return;
        }
        if (x0 == y0) {
            re.append(x0).append('(');
            sameLength(x.substring(1), y.substring(1), re);
            re.append(')');
            return;
        }
        re.append('(').append(x0).append('(');
        sameLength(x.substring(1), "9".repeat(n - 1), re);
        re.append("))");
        if (x0 + 1 <= y0 - 1) {
            re.append("|([").append((char) (x0 + 1)).append('-').append((char) (y0 - 1)).append("][0-9]{")
                    .append(n - 1).append("})");
        }
        re.append("|(").append(y0).append('(');
        sameLength("0".repeat(n - 1), y.substring(1), re);
        re.append("))");
    }

    /**
     * Numbers: null when unbounded (the plain JSON number lexeme), else the texts satisfying the bounds and {@code
     * multipleOf} ({@link NumberRanges}).
     */
    static Automaton number(Map<?, ?> m, String at, int maxStates) {
        Object format = m.get("format");
        if (format != null && !"float".equals(format) && !"double".equals(format)) {
            throw new UnsupportedSchemaException("format", "number format '" + format + "' (at " + at
                    + ") is not supported (supported: float, double)");
        }
        return NumberRanges.constrains(m) ? NumberRanges.number(m, at, maxStates) : null;
    }

    /** A non-negative integer keyword, or {@code def} when absent. */
    static int count(Map<?, ?> m, String keyword, String at, int def) {
        Object v = m.get(keyword);
        if (v == null) {
            return def;
        }
        if (!(v instanceof Number n) || n.doubleValue() < 0 || n.doubleValue() != Math.rint(n.doubleValue())
                || n.doubleValue() > 100_000) {
            throw new UnsupportedSchemaException(keyword, keyword + " at " + at
                    + " must be an integer in [0, 100000]");
        }
        return n.intValue();
    }
}
