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
     * Integers in [lo, hi] written without leading zeros (and never as -0), as a minimal DFA built directly
     * ({@link IntegerRanges}): the regular expression of digit ranges this replaced cost dk.brics a minimisation per
     * sub-expression, a quarter of the compile time of the slowest MaskBench schemas.
     */
    static Automaton integerRange(long lo, long hi) {
        return IntegerRanges.of(lo, hi);
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
