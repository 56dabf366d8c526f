package io.tqserve.constraint;

import dk.brics.automaton.Automaton;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The pieces of JSON text as {@code dk.brics.automaton} automata over the byte alphabet: every char of these
 * automata is one byte (0..255) of the UTF-8 output, so that a token's bytes can be run through them directly.
 * The output they describe is compact JSON with at most one space after {@code :} and {@code ,} (what models
 * write), strings of valid UTF-8 whose escapes are {@code \" \\ \/ \b \f \n \r \t} and {@code \u0000-\u001f}
 * (no surrogate escapes, so every string decodes to what it says), and numbers of bounded length (at most 15
 * integer and 15 fraction digits, no exponent: every such number parses exactly as a double or a long).
 */
public final class JsonAutomata {
    /** Most integer digits of a number (10^15 is still exact in a double). */
    static final int MAX_INT_DIGITS = 15;
    /** Most fraction digits of a number. */
    static final int MAX_FRACTION_DIGITS = 15;

    private static final java.util.Map<String, Automaton> MEMO = new java.util.concurrent.ConcurrentHashMap<>();

    private JsonAutomata() {
    }

    /** Building blocks are built once per JVM (dk.brics operations copy their operands, so sharing is safe). */
    private static Automaton memo(String key, java.util.function.Supplier<Automaton> build) {
        Automaton a = MEMO.get(key);
        if (a == null) {
            a = build.get();
            MEMO.putIfAbsent(key, a);
        }
        return a;
    }

    /** The UTF-8 bytes of {@code s} as one char per byte. */
    public static String bytes(String s) {
        return new String(s.getBytes(StandardCharsets.UTF_8), StandardCharsets.ISO_8859_1);
    }

    /** Exactly the UTF-8 bytes of {@code s}. */
    public static Automaton literal(String s) {
        return Automaton.makeString(bytes(s));
    }

    static Automaton range(int from, int to) {
        return Automaton.makeCharRange((char) from, (char) to);
    }

    static Automaton seq(Automaton... parts) {
        return Automaton.concatenate(List.of(parts));
    }

    static Automaton any(Automaton... parts) {
        return Automaton.union(List.of(parts));
    }

    /** An optional single space. */
    static Automaton space() {
        return Automaton.makeChar(' ').optional();
    }

    /** One character of a JSON string's contents: an unescaped character (as valid UTF-8) or an escape. */
    static Automaton stringChar() {
        return memo("char", JsonAutomata::buildStringChar);
    }

    private static Automaton buildStringChar() {
        Automaton cont = range(0x80, 0xBF);
        Automaton plain = any(range(0x20, 0x21), range(0x23, 0x5B), range(0x5D, 0x7F));
        Automaton utf8 = any(
                seq(range(0xC2, 0xDF), cont),
                seq(Automaton.makeChar((char) 0xE0), range(0xA0, 0xBF), cont),
                seq(range(0xE1, 0xEC), cont, cont),
                seq(Automaton.makeChar((char) 0xED), range(0x80, 0x9F), cont),
                seq(range(0xEE, 0xEF), cont, cont),
                seq(Automaton.makeChar((char) 0xF0), range(0x90, 0xBF), cont, cont),
                seq(range(0xF1, 0xF3), cont, cont, cont),
                seq(Automaton.makeChar((char) 0xF4), range(0x80, 0x8F), cont, cont));
        Automaton hex = any(range('0', '9'), range('a', 'f'), range('A', 'F'));
        Automaton escape = seq(Automaton.makeChar('\\'), any(Automaton.makeCharSet("\"\\/bfnrt"),
                seq(literal("u00"), range('0', '1'), hex)));
        Automaton c = any(plain, utf8, escape);
        c.minimize();
        return c;
    }

    /** A JSON string of {@code min..max} characters ({@code max < 0}: unbounded). */
    public static Automaton string(int min, int max) {
        return memo("string:" + min + ":" + max, () -> buildString(min, max));
    }

    private static Automaton buildString(int min, int max) {
        Automaton c = stringChar();
        Automaton body = max < 0 ? c.repeat(min) : c.repeat(min, max);
        Automaton a = seq(Automaton.makeChar('"'), body, Automaton.makeChar('"'));
        a.minimize();
        return a;
    }

    static Automaton digits(int min, int max) {
        return range('0', '9').repeat(min, max);
    }

    /** Digits of a non-negative integer without leading zeros, at most {@code maxDigits} long. */
    static Automaton natural(int maxDigits) {
        return any(Automaton.makeChar('0'), seq(range('1', '9'), digits(0, maxDigits - 1)));
    }

    /** An integer of at most {@code maxDigits} digits, optionally negative (never {@code -0}). */
    public static Automaton integer(int maxDigits) {
        Automaton a = any(natural(maxDigits), seq(Automaton.makeChar('-'), range('1', '9'), digits(0, maxDigits - 1)));
        a.minimize();
        return a;
    }

    /** A number: an integer part and an optional fraction, no exponent. */
    public static Automaton number() {
        return memo("number", JsonAutomata::buildNumber);
    }

    private static Automaton buildNumber() {
        Automaton fraction = seq(Automaton.makeChar('.'), digits(1, MAX_FRACTION_DIGITS)).optional();
        Automaton a = seq(Automaton.makeChar('-').optional(), natural(MAX_INT_DIGITS), fraction);
        a.minimize();
        return a;
    }

    /** A non-negative number (no sign). */
    static Automaton nonNegativeNumber() {
        Automaton a = seq(natural(MAX_INT_DIGITS),
                seq(Automaton.makeChar('.'), digits(1, MAX_FRACTION_DIGITS)).optional());
        a.minimize();
        return a;
    }

    public static Automaton bool() {
        return any(literal("true"), literal("false"));
    }

    public static Automaton nul() {
        return literal("null");
    }

    /** {@code open item (, item)* close} with {@code min..max} items ({@code max < 0}: unbounded). */
    static Automaton list(char open, Automaton item, int min, int max, char close) {
        Automaton sep = seq(Automaton.makeChar(','), space());
        Automaton tail = seq(sep, item);
        Automaton body;
        if (max == 0) {
            body = Automaton.makeEmptyString();
        } else {
            Automaton more = max < 0 ? tail.repeat(Math.max(0, min - 1)) : tail.repeat(Math.max(0, min - 1), max - 1);
            body = seq(item, more);
            if (min == 0) {
                body = body.optional();
            }
        }
        Automaton a = seq(Automaton.makeChar(open), body, Automaton.makeChar(close));
        a.minimize();
        return a;
    }

    /** A JSON array of {@code min..max} items ({@code max < 0}: unbounded). */
    public static Automaton array(Automaton item, int min, int max) {
        return list('[', item, min, max, ']');
    }

    /** {@code "key": value} for any string key. */
    static Automaton member(Automaton value) {
        return seq(string(0, -1), Automaton.makeChar(':'), space(), value);
    }

    /**
     * Any JSON value nested at most {@code depth} containers deep. JSON's nesting is context-free, which no finite
     * automaton captures; bounded, it is regular, and building each level from the minimized level below keeps the
     * automaton linear in the depth (a regular expression written out would grow 4^depth).
     */
    public static Automaton anyValue(int depth) {
        return memo("any:" + depth, () -> buildAnyValue(depth));
    }

    private static Automaton buildAnyValue(int depth) {
        Automaton scalar = any(string(0, -1), number(), bool(), nul());
        scalar.minimize();
        if (depth == 0) {
            return scalar;
        }
        Automaton v = anyValue(depth - 1);
        Automaton next = any(scalar, list('{', member(v), 0, -1, '}'), array(v, 0, -1));
        next.minimize();
        return next;
    }

    /** Any JSON object whose values nest at most {@code depth - 1} containers deeper. */
    public static Automaton anyObject(int depth) {
        return memo("object:" + depth, () -> list('{', member(anyValue(depth - 1)), 0, -1, '}'));
    }

    /**
     * An object with the given members in the given order, each present or (when optional) absent, separated by
     * commas. Built from the back: {@code rest[i][e]} is the text of members i.. given whether one was already
     * written (a comma is needed), so the automaton stays linear in the number of members.
     */
    static Automaton object(List<String> names, List<Automaton> values, List<Boolean> required) {
        int n = names.size();
        List<Automaton[]> rest = new ArrayList<>(n + 1);
        for (int i = 0; i <= n; i++) {
            rest.add(new Automaton[2]);
        }
        rest.get(n)[0] = Automaton.makeEmptyString();
        rest.get(n)[1] = Automaton.makeEmptyString();
        for (int i = n - 1; i >= 0; i--) {
            Automaton member = seq(literal(quote(names.get(i))), Automaton.makeChar(':'), space(), values.get(i));
            for (int e = 0; e < 2; e++) {
                Automaton lead = e == 1 ? seq(Automaton.makeChar(','), space()) : Automaton.makeEmptyString();
                Automaton present = seq(lead, member, rest.get(i + 1)[1]);
                rest.get(i)[e] = required.get(i) ? present : any(present, rest.get(i + 1)[e]);
            }
        }
        Automaton a = seq(Automaton.makeChar('{'), rest.get(0)[0], Automaton.makeChar('}'));
        a.minimize();
        return a;
    }

    /** {@code s} as a JSON string literal (the escapes the string automaton allows). */
    public static String quote(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                case '\b' -> sb.append("\\b");
                case '\f' -> sb.append("\\f");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        return sb.append('"').toString();
    }
}
