package io.tqserve.constraint;

import static io.tqserve.constraint.Scalars.any;
import static io.tqserve.constraint.Scalars.digits;
import static io.tqserve.constraint.Scalars.range;
import static io.tqserve.constraint.Scalars.seq;

import dk.brics.automaton.Automaton;
import dk.brics.automaton.State;
import dk.brics.automaton.Transition;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Numeric bounds ({@code minimum}, {@code maximum}, {@code exclusiveMinimum}, {@code exclusiveMaximum}, any
 * decimal) and {@code multipleOf} as exact regular languages over the text of a JSON number.
 *
 * <p>A bounded number or a multiple is written in plain decimal notation, without an exponent: {@code
 * -?(0|[1-9][0-9]{0,18})(\.[0-9]{1,20})?}. On that text a bound is a digit-by-digit comparison (an integer part
 * with more digits is larger; at equal integer parts the fraction digits decide) and a multiple of {@code a *
 * 10^-s} is a remainder automaton: the digits of the number times {@code 10^s} read modulo {@code a}, with only
 * zeros past the {@code s}-th fraction digit. Both are intersected, so every accepted text satisfies every
 * keyword; a text with an exponent is never produced (deciding a bound on {@code m * 10^e} for every exponent
 * would multiply the automaton by the exponent range). {@code -0} is zero. dk.brics has numeric automata only
 * for integers ({@code makeMinInteger}, {@code makeMaxInteger}), hence this class.
 */
final class NumberRanges {
    /** Most integer digits of a number text (as the plain number lexeme). */
    static final int INT_DIGITS = 19;
    /** Most fraction digits of a number text (as the plain number lexeme). */
    static final int FRACTION_DIGITS = 20;
    private static final Automaton UNSIGNED = seq(any(Automaton.makeChar('0'), seq(range('1', '9'),
            digits(0, INT_DIGITS - 1))), seq(Automaton.makeChar('.'), digits(1, FRACTION_DIGITS)).optional());
    private static final Automaton SYNTAX = seq(Automaton.makeChar('-').optional(), UNSIGNED);
    private static final String[] BOUNDS = {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"};

    private NumberRanges() {
    }

    /** Whether the schema has a keyword this class enforces. */
    static boolean constrains(Map<?, ?> m) {
        for (String k : BOUNDS) {
            if (m.containsKey(k)) {
                return true;
            }
        }
        return m.containsKey("multipleOf");
    }

    /**
     * The texts of the numbers satisfying the schema's bounds and {@code multipleOf}, in plain decimal notation.
     *
     * @param maxStates most states of the multipleOf automaton ({@code multipleOf} is refused beyond)
     */
    static Automaton number(Map<?, ?> m, String at, int maxStates) {
        Automaton a = SYNTAX.clone();
        for (String k : BOUNDS) {
            if (m.containsKey(k)) {
                a = a.intersection(bound(SchemaCompiler.decimal(m.get(k), k, at), k));
                a.minimize();
            }
        }
        if (m.containsKey("multipleOf")) {
            a = a.intersection(multipleOf(m.get("multipleOf"), at, maxStates));
            if (a.getNumberOfStates() > 16 * maxStates) { // minimising is not interruptible: bound it first
                throw new ConstraintBudgetException("multipleOf", "the automaton of the number at " + at + " has "
                        + a.getNumberOfStates() + " states before minimisation (at most " + 16 * maxStates + ")");
            }
            a.minimize();
        }
        if (a.isEmpty()) {
            throw new UnsupportedSchemaException(m.containsKey("multipleOf") ? "multipleOf" : "minimum",
                    "no number in plain decimal notation (at most " + INT_DIGITS + " integer and " + FRACTION_DIGITS
                    + " fraction digits) satisfies the bounds and multipleOf at " + at);
        }
        return a;
    }

    /** The signed number texts satisfying one bound keyword against {@code c}. */
    static Automaton bound(BigDecimal c, String keyword) {
        boolean strict = keyword.startsWith("exclusive");
        boolean lower = keyword.endsWith("inimum");
        Automaton minus = Automaton.makeChar('-');
        BigDecimal abs = c.abs();
        if (lower) {
            if (c.signum() >= 0) { // the negatives are below, but -0 equals a zero bound
                Automaton a = above(abs, strict);
                return strict || c.signum() > 0 ? a : a.union(seq(minus, below(BigDecimal.ZERO, false)));
            }
            return UNSIGNED.union(seq(minus, below(abs, strict)));
        }
        if (c.signum() > 0 || c.signum() == 0 && !strict) {
            return below(abs, strict).union(seq(minus, UNSIGNED));
        }
        return seq(minus, above(abs, strict)); // below zero, or below a negative bound
    }

    /** Unsigned texts of value at least {@code c} (greater if strict), c non-negative. */
    private static Automaton above(BigDecimal c, boolean strict) {
        String ci = c.toBigInteger().toString();
        String cf = fraction(c);
        if (cf.length() > FRACTION_DIGITS) { // no text equals c: above c is above its truncation
            cf = stripZeros(cf.substring(0, FRACTION_DIGITS));
            strict = true;
        }
        if (ci.length() > INT_DIGITS) {
            return Automaton.makeEmpty();
        }
        List<Automaton> parts = new ArrayList<>();
        parts.add(seq(intAbove(ci), anyFraction()));
        Automaton dot = Automaton.makeChar('.');
        if (cf.isEmpty()) {
            parts.add(seq(Automaton.makeString(ci), strict
                    ? seq(dot, nonZeroTail())
                    : anyFraction()));
        } else {
            for (int i = 0; i < cf.length(); i++) { // the first differing fraction digit is larger
                if (cf.charAt(i) < '9') {
                    parts.add(seq(Automaton.makeString(ci + "." + cf.substring(0, i)),
                            range(cf.charAt(i) + 1, '9'), anyDigits()));
                }
            }
            Automaton equal = Automaton.makeString(ci + "." + cf);
            parts.add(strict ? seq(equal, nonZeroTail())
                    : seq(equal, anyDigits()));
        }
        return UNSIGNED.intersection(Automaton.union(parts));
    }

    /** Unsigned texts of value at most {@code c} (less if strict), c non-negative. */
    private static Automaton below(BigDecimal c, boolean strict) {
        String ci = c.toBigInteger().toString();
        String cf = fraction(c);
        if (cf.length() > FRACTION_DIGITS) { // no text equals c: below c is at most its truncation
            cf = stripZeros(cf.substring(0, FRACTION_DIGITS));
            strict = false;
        }
        if (ci.length() > INT_DIGITS) {
            return UNSIGNED;
        }
        List<Automaton> parts = new ArrayList<>();
        parts.add(seq(intBelow(ci), anyFraction()));
        Automaton dot = Automaton.makeChar('.');
        Automaton whole = Automaton.makeString(ci);
        if (cf.isEmpty()) {
            if (!strict) {
                parts.add(seq(whole, seq(dot, Automaton.makeChar('0').repeat(1)).optional()));
            }
        } else {
            parts.add(whole); // ci < c
            for (int i = 0; i < cf.length(); i++) {
                if (i > 0) { // a proper prefix of c's fraction: the missing digits are zeros, c's are not all
                    parts.add(Automaton.makeString(ci + "." + cf.substring(0, i)));
                }
                if (cf.charAt(i) > '0') { // the first differing fraction digit is smaller
                    parts.add(seq(Automaton.makeString(ci + "." + cf.substring(0, i)),
                            range('0', cf.charAt(i) - 1), anyDigits()));
                }
            }
            if (!strict) {
                parts.add(seq(Automaton.makeString(ci + "." + cf), Automaton.makeChar('0').repeat()));
            }
        }
        return UNSIGNED.intersection(Automaton.union(parts));
    }

    /** Integer parts (no leading zeros) larger than {@code ci}. */
    private static Automaton intAbove(String ci) {
        int n = ci.length();
        List<Automaton> parts = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            if (ci.charAt(i) < '9') {
                parts.add(seq(Automaton.makeString(ci.substring(0, i)), range(ci.charAt(i) + 1, '9'),
                        digits(n - 1 - i, n - 1 - i)));
            }
        }
        if (n < INT_DIGITS) {
            parts.add(seq(range('1', '9'), digits(n, INT_DIGITS - 1)));
        }
        return Automaton.union(parts);
    }

    /** Integer parts (no leading zeros) smaller than {@code ci}. */
    private static Automaton intBelow(String ci) {
        int n = ci.length();
        List<Automaton> parts = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            char low = i == 0 && n > 1 ? '1' : '0';
            if (ci.charAt(i) > low) {
                parts.add(seq(Automaton.makeString(ci.substring(0, i)), range(low, ci.charAt(i) - 1),
                        digits(n - 1 - i, n - 1 - i)));
            }
        }
        if (n > 1) {
            parts.add(any(Automaton.makeChar('0'), seq(range('1', '9'), digits(0, n - 2))));
        }
        return Automaton.union(parts);
    }

    /**
     * Digits without a length bound: the caller intersects with the syntax, which bounds them (a bounded
     * repetition here would make the subset construction track every position a nonzero digit may take).
     */
    private static Automaton anyDigits() {
        return range('0', '9').repeat();
    }

    /** Digits, at least one of them nonzero (unbounded, as {@link #anyDigits}). */
    private static Automaton nonZeroTail() {
        return seq(Automaton.makeChar('0').repeat(), range('1', '9'), anyDigits());
    }

    private static Automaton anyFraction() {
        return seq(Automaton.makeChar('.'), digits(1, FRACTION_DIGITS)).optional();
    }

    /** The fraction digits of a non-negative c without trailing zeros ("" for an integer). */
    private static String fraction(BigDecimal c) {
        BigDecimal f = c.subtract(new BigDecimal(c.toBigInteger())).stripTrailingZeros();
        return f.signum() == 0 ? "" : f.toPlainString().substring(2);
    }

    private static String stripZeros(String digits) {
        int end = digits.length();
        while (end > 0 && digits.charAt(end - 1) == '0') {
            end--;
        }
        return digits.substring(0, end);
    }

    /**
     * Texts (signed, any length; the syntax is intersected by the caller) of the multiples of {@code multipleOf}
     * = {@code a * 10^-s}: x is a multiple iff {@code x * 10^s} is an integer divisible by {@code a}, i.e. the
     * fraction digits past the {@code s}-th are zeros and the integer digits followed by the first {@code s}
     * fraction digits (padded with zeros) are divisible by {@code a}. States: the remainder modulo {@code a} times
     * the fraction digits read (up to {@code s}).
     */
    static Automaton multipleOf(Object value, String at, int maxStates) {
        BigDecimal step = SchemaCompiler.decimal(value, "multipleOf", at).stripTrailingZeros();
        if (step.signum() <= 0) {
            throw new UnsupportedSchemaException("multipleOf", "multipleOf at " + at + " must be greater than 0");
        }
        if (step.precision() - step.scale() > 10 || step.scale() > 1000) {
            throw new UnsupportedSchemaException("multipleOf", "multipleOf at " + at + " is out of range");
        }
        int s = Math.max(step.scale(), 0);
        BigInteger big = step.movePointRight(s).toBigIntegerExact();
        int cols = Math.max(s, 1);
        if (big.bitLength() > 31 || big.longValue() * (cols + 1) + 3 > maxStates) {
            throw new ConstraintBudgetException("multipleOf", "multipleOf " + step.toPlainString() + " at " + at
                    + " needs more than " + maxStates + " automaton states");
        }
        int a = big.intValue();
        State start = new State();
        State zero = new State(); // the integer part "0"
        State[] integer = new State[a];
        State[] dot = new State[a]; // after the point, before a digit
        State[][] frac = new State[a][cols + 1]; // frac[r][j]: j fraction digits read (j >= 1, capped at cols)
        for (int r = 0; r < a; r++) {
            integer[r] = new State();
            dot[r] = new State();
            for (int j = 1; j <= cols; j++) {
                frac[r][j] = new State();
            }
        }
        int[] pow = new int[s + 1]; // 10^k mod a
        pow[0] = 1 % a;
        for (int k = 1; k <= s; k++) {
            pow[k] = pow[k - 1] * 10 % a;
        }
        State negative = new State();
        start.addTransition(new Transition('-', negative));
        for (State from : new State[] {start, negative}) {
            from.addTransition(new Transition('0', zero));
            for (char d = '1'; d <= '9'; d++) {
                from.addTransition(new Transition(d, integer[(d - '0') % a]));
            }
        }
        zero.setAccept(true);
        zero.addTransition(new Transition('.', dot[0]));
        for (int r = 0; r < a; r++) {
            integer[r].setAccept((long) r * pow[s] % a == 0);
            integer[r].addTransition(new Transition('.', dot[r]));
            for (char d = '0'; d <= '9'; d++) {
                integer[r].addTransition(new Transition(d, integer[(r * 10 + d - '0') % a]));
                if (s > 0) {
                    dot[r].addTransition(new Transition(d, frac[(r * 10 + d - '0') % a][1]));
                }
            }
            if (s == 0) {
                dot[r].addTransition(new Transition('0', frac[r][1]));
            }
            for (int j = 1; j <= cols; j++) {
                frac[r][j].setAccept((long) r * pow[s - Math.min(j, s)] % a == 0);
                if (j < s) {
                    for (char d = '0'; d <= '9'; d++) {
                        frac[r][j].addTransition(new Transition(d, frac[(r * 10 + d - '0') % a][j + 1]));
                    }
                } else {
                    frac[r][j].addTransition(new Transition('0', frac[r][j]));
                }
            }
        }
        Automaton m = new Automaton();
        m.setInitialState(start);
        m.setDeterministic(true);
        return m;
    }
}
