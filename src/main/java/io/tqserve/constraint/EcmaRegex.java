package io.tqserve.constraint;

import dk.brics.automaton.Automaton;
import dk.brics.automaton.BasicAutomata;
import dk.brics.automaton.State;
import dk.brics.automaton.Transition;
import java.util.ArrayList;
import java.util.List;

/**
 * A JSON Schema {@code pattern} (an ECMA-262 regular expression, matched anywhere in the string unless anchored)
 * as a {@link dk.brics.automaton.Automaton} over the string's characters. dk.brics has its own regex syntax (no
 * {@code \d}, anchors or escapes such as {@code \x41}, and {@code & ~ # @ < >} are operators), so the pattern is
 * parsed here and the automaton built with dk.brics' operations; a translation to its syntax would be as long and
 * easier to get wrong.
 *
 * <p>Only regular constructs are accepted; back-references, lookaround, word boundaries, {@code \p{...}} and
 * anchors anywhere but at the start or end of a top-level branch throw {@link UnsupportedSchemaException}. Where
 * validators disagree (Python's {@code re} and ECMA-262 differ on {@code \d}, {@code \w}, {@code \s}, {@code .}
 * and {@code $}), the narrower reading is taken, so a string this automaton accepts matches under both:
 * {@code \d} and {@code \w} are ASCII, their negations also exclude Unicode digits and letters, {@code .} excludes
 * all four line terminators, {@code $} is the end of the string. Characters outside the Basic Multilingual Plane
 * are never matched (ECMA counts them as two units, Python as one).
 */
final class EcmaRegex {
    /** Largest repetition bound accepted in {@code {n,m}}. */
    static final int MAX_REPEAT = 1000;
    private static final char MAX = '\uFFFF';

    private final String p;
    private final int maxStates;
    private int i;

    private EcmaRegex(String pattern, int maxStates) {
        this.p = pattern;
        this.maxStates = maxStates;
    }

    /** The strings (of BMP characters) in which {@code pattern} finds a match. */
    static Automaton search(String pattern, int maxStates) {
        EcmaRegex r = new EcmaRegex(pattern, maxStates);
        List<Automaton> branches = new ArrayList<>();
        while (true) {
            boolean start = r.eat('^');
            Automaton body = r.sequence(true);
            boolean end = false;
            if (r.peek('$')) {
                r.i++;
                end = true;
            }
            Automaton a = body;
            if (!start) {
                a = anyString().concatenate(a);
            }
            if (!end) {
                a = a.concatenate(anyString());
            }
            branches.add(r.bound(a));
            if (r.i >= r.p.length()) {
                break;
            }
            if (!r.eat('|')) {
                throw r.error("unexpected '" + r.p.charAt(r.i) + "'");
            }
        }
        Automaton a = CharNfa.determinize(Automaton.union(branches).intersection(anyString()), maxStates, "the pattern /" + pattern + "/",
                "pattern");
        return minimizeBounded(a);
    }

    /** Work units (character intervals times transitions) past which {@link #minimizeBounded} leaves a DFA be. */
    static final long MINIMIZE_WORK = 20_000_000L;

    /**
     * Minimises a DFA ({@link CharDfa}) when that is cheap, else leaves it as it is (still deterministic and exact,
     * only larger): a minimisation checks neither a budget nor the thread's interrupt, and its work grows with the
     * automaton's states times its distinct character intervals (with dk.brics' Hopcroft, a class of 700 Unicode
     * ranges repeated 200 times took 1.5 s of CPU).
     */
    static Automaton minimizeBounded(Automaton a) {
        java.util.BitSet points = new java.util.BitSet();
        long transitions = 0;
        for (State q : a.getStates()) {
            for (Transition t : q.getTransitions()) {
                points.set(t.getMin());
                transitions++;
            }
        }
        return transitions * (points.cardinality() + 1L) <= MINIMIZE_WORK ? CharDfa.minimal(a) : a;
    }

    /**
     * Any string of BMP characters (no surrogate code units), as a one-state DFA: a product with it stays
     * deterministic (dk.brics' {@code repeat} of a character would be an NFA, and everything built from it
     * determinised again at its minimisation).
     */
    static Automaton anyString() {
        State s = new State();
        s.setAccept(true);
        s.addTransition(new Transition('\u0000', '\uD7FF', s));
        s.addTransition(new Transition('\uE000', MAX, s));
        Automaton a = new Automaton();
        a.setInitialState(s);
        a.setDeterministic(true);
        return a;
    }

    /** Strings of {@code min} to {@code max} BMP characters ({@code max} -1: no upper bound), as a DFA. */
    static Automaton lengths(int min, int max) {
        int n = max < 0 ? min + 1 : max + 1;
        State[] states = new State[n];
        for (int k = 0; k < n; k++) {
            states[k] = new State();
            states[k].setAccept(k >= min);
        }
        for (int k = 0; k < n; k++) {
            State to = k + 1 < n ? states[k + 1] : max < 0 ? states[k] : null;
            if (to != null) {
                states[k].addTransition(new Transition('\u0000', '\uD7FF', to));
                states[k].addTransition(new Transition('\uE000', MAX, to));
            }
        }
        Automaton a = new Automaton();
        a.setInitialState(states[0]);
        a.setDeterministic(true);
        return a;
    }

    /** One BMP character (not a surrogate code unit). */
    static Automaton anyChar() {
        return BasicAutomata.makeCharRange('\u0000', '\uD7FF').union(BasicAutomata.makeCharRange('\uE000', MAX));
    }

    /** The parts are built without determinizing (linear); a part already over the bound is refused. */
    private Automaton bound(Automaton a) {
        if (a.getNumberOfStates() > maxStates) {
            throw new ConstraintBudgetException("pattern", "the pattern /" + p + "/ needs more than " + maxStates
                    + " automaton states");
        }
        return a;
    }

    private UnsupportedSchemaException error(String why) {
        return new UnsupportedSchemaException("pattern", "pattern /" + p + "/ is not supported by constrained "
                + "decoding: " + why);
    }

    private boolean peek(char c) {
        return i < p.length() && p.charAt(i) == c;
    }

    private boolean eat(char c) {
        if (peek(c)) {
            i++;
            return true;
        }
        return false;
    }

    /** Alternatives inside a group. */
    private Automaton alternation() {
        List<Automaton> options = new ArrayList<>();
        options.add(sequence(false));
        while (eat('|')) {
            options.add(sequence(false));
        }
        return bound(Automaton.union(options));
    }

    /** Terms up to '|', ')' or the end; at top level a '$' that ends the branch also stops it. */
    private Automaton sequence(boolean topLevel) {
        Automaton a = BasicAutomata.makeEmptyString();
        while (i < p.length()) {
            char c = p.charAt(i);
            if (c == '|' || c == ')') {
                break;
            }
            if (c == '$') {
                if (topLevel && (i + 1 == p.length() || p.charAt(i + 1) == '|')) {
                    break;
                }
                throw error("'$' that does not end the pattern");
            }
            if (c == '^') {
                throw error("'^' that does not start the pattern");
            }
            Automaton atom = atom();
            a = bound(a.concatenate(quantified(atom)));
        }
        return a;
    }

    private Automaton quantified(Automaton atom) {
        if (i >= p.length()) {
            return atom;
        }
        char c = p.charAt(i);
        Automaton out;
        if (c == '*') {
            i++;
            out = atom.repeat();
        } else if (c == '+') {
            i++;
            out = atom.repeat(1);
        } else if (c == '?') {
            i++;
            out = atom.optional();
        } else if (c == '{') {
            int save = i;
            int[] range = braces();
            if (range == null) {
                i = save;
                return atom; // a literal '{' (Annex B), read as the next atom
            }
            // dk.brics builds a repetition's copies without a check of any budget: refuse it by its size first
            long copies = Math.max(1, range[1] < 0 ? range[0] + 1L : range[1]);
            if (atom.getNumberOfStates() * copies > maxStates) {
                throw new ConstraintBudgetException("pattern", "the pattern /" + p + "/ repeats a part of "
                        + atom.getNumberOfStates() + " automaton states " + copies + " times (more than " + maxStates
                        + " states)");
            }
            out = range[1] < 0 ? atom.repeat(range[0]) : atom.repeat(range[0], range[1]);
        } else {
            return atom;
        }
        eat('?'); // lazy: the same language
        if (i < p.length() && "*+?{".indexOf(p.charAt(i)) >= 0 && !(p.charAt(i) == '{' && bracesAhead() == null)) {
            throw error("a quantifier after a quantifier");
        }
        return bound(out);
    }

    private int[] bracesAhead() {
        int save = i;
        int[] r = braces();
        i = save;
        return r;
    }

    /** {n}, {n,}, {n,m} at i (moving past it), or null if the text there is not a quantifier. */
    private int[] braces() {
        if (!eat('{')) {
            return null;
        }
        int lo = number();
        if (lo < 0) {
            return null;
        }
        int hi = lo;
        if (eat(',')) {
            hi = peek('}') ? -1 : number();
            if (hi == -2 || (hi < 0 && !peek('}'))) {
                return null;
            }
        }
        if (!eat('}')) {
            return null;
        }
        if (lo > MAX_REPEAT || hi > MAX_REPEAT) {
            throw new ConstraintBudgetException("pattern", "the pattern /" + p + "/ repeats more than "
                    + MAX_REPEAT + " times");
        }
        if (hi >= 0 && hi < lo) {
            throw error("{" + lo + "," + hi + "} out of order");
        }
        return new int[] {lo, hi};
    }

    /** Decimal digits at i, or -1 (none) / -2 (too many). */
    private int number() {
        int start = i;
        while (i < p.length() && Character.isDigit(p.charAt(i)) && p.charAt(i) < 128) {
            i++;
        }
        if (i == start) {
            return -1;
        }
        if (i - start > 6) {
            return Integer.MAX_VALUE;
        }
        return Integer.parseInt(p.substring(start, i));
    }

    private Automaton atom() {
        char c = p.charAt(i++);
        switch (c) {
            case '.':
                return chars(CharSet.dot());
            case '(':
                if (eat('?')) {
                    if (eat(':')) {
                        // non-capturing group
                    } else if (peek('<') && i + 1 < p.length() && p.charAt(i + 1) != '=' && p.charAt(i + 1) != '!') {
                        int close = p.indexOf('>', i);
                        if (close < 0) {
                            throw error("unterminated group name");
                        }
                        i = close + 1;
                    } else {
                        throw error("lookaround or group flags '(?" + (i < p.length() ? p.charAt(i) : ' ') + "'");
                    }
                }
                Automaton inner = alternation();
                if (!eat(')')) {
                    throw error("unbalanced '('");
                }
                return inner;
            case '[':
                return chars(charClass());
            case '\\':
                return chars(escape(false));
            case '*', '+', '?':
                throw error("nothing to repeat before '" + c + "'");
            case '{':
                if (bracesAheadAt(i - 1)) {
                    throw error("nothing to repeat before '{'");
                }
                return BasicAutomata.makeChar(c);
            case ']', '}':
                return BasicAutomata.makeChar(c);
            default:
                if (Character.isSurrogate(c)) {
                    throw error("a character outside the Basic Multilingual Plane");
                }
                return BasicAutomata.makeChar(c);
        }
    }

    private boolean bracesAheadAt(int at) {
        int save = i;
        i = at;
        int[] r;
        try {
            r = braces();
        } catch (RuntimeException e) {
            r = new int[0];
        }
        i = save;
        return r != null;
    }

    /**
     * A class as two states, one transition per range (the ranges are disjoint: a DFA). A union of one automaton per
     * range would have two states per range, and a bounded repetition copies every state of its atom.
     */
    private static Automaton chars(CharSet s) {
        if (s.size() == 0) {
            return BasicAutomata.makeEmpty();
        }
        State start = new State();
        State end = new State();
        end.setAccept(true);
        for (int k = 0; k < s.size(); k++) {
            start.addTransition(new Transition(s.lo(k), s.hi(k), end));
        }
        Automaton a = new Automaton();
        a.setInitialState(start);
        a.setDeterministic(true);
        return a;
    }

    private CharSet charClass() {
        boolean negate = eat('^');
        CharSet set = new CharSet();
        boolean first = true;
        while (true) {
            if (i >= p.length()) {
                throw error("unterminated '['");
            }
            char c = p.charAt(i);
            if (c == ']' && !first) {
                i++;
                break;
            }
            if (c == ']') { // ECMA: "[]" is the empty class, "[^]" any character
                i++;
                break;
            }
            first = false;
            CharSet lo = classAtom();
            if (peek('-') && i + 1 < p.length() && p.charAt(i + 1) != ']') {
                i++;
                CharSet hi = classAtom();
                if (lo.size() != 1 || hi.size() != 1 || lo.lo(0) != lo.hi(0) || hi.lo(0) != hi.hi(0)) {
                    throw error("a range with a class escape at an end");
                }
                if (hi.lo(0) < lo.lo(0)) {
                    throw error("a range out of order");
                }
                set.add(lo.lo(0), hi.lo(0));
            } else {
                set.addAll(lo);
            }
        }
        return negate ? set.complement() : set;
    }

    private CharSet classAtom() {
        char c = p.charAt(i++);
        if (c == '\\') {
            return escape(true);
        }
        if (Character.isSurrogate(c)) {
            throw error("a character outside the Basic Multilingual Plane");
        }
        return CharSet.of(c, c);
    }

    /** The escape after a backslash (at i). */
    private CharSet escape(boolean inClass) {
        if (i >= p.length()) {
            throw error("a trailing backslash");
        }
        char c = p.charAt(i++);
        switch (c) {
            case 'd':
                return CharSet.of('0', '9');
            case 'D':
                return CharSet.digitsAnywhere().complement();
            case 'w':
                return CharSet.word();
            case 'W':
                return CharSet.wordAnywhere().complement();
            case 's':
                return CharSet.spaceBoth();
            case 'S':
                return CharSet.spaceEither().complement();
            case 'n':
                return CharSet.of('\n', '\n');
            case 'r':
                return CharSet.of('\r', '\r');
            case 't':
                return CharSet.of('\t', '\t');
            case 'f':
                return CharSet.of('\f', '\f');
            case 'v':
                return CharSet.of('\u000B', '\u000B');
            case 'b':
                if (inClass) {
                    return CharSet.of('\b', '\b');
                }
                throw error("a word boundary '\\b'");
            case '0':
                if (i < p.length() && Character.isDigit(p.charAt(i))) {
                    throw error("an octal escape");
                }
                return CharSet.of('\0', '\0');
            case 'x': {
                int v = hex(2);
                return CharSet.of((char) v, (char) v);
            }
            case 'u': {
                if (peek('{')) {
                    throw error("a '\\u{...}' escape");
                }
                int v = hex(4);
                if (Character.isSurrogate((char) v)) {
                    throw error("a surrogate escape");
                }
                return CharSet.of((char) v, (char) v);
            }
            case 'c': {
                if (i < p.length() && Character.isLetter(p.charAt(i)) && p.charAt(i) < 128) {
                    char v = (char) (p.charAt(i++) % 32);
                    return CharSet.of(v, v);
                }
                throw error("a '\\c' escape");
            }
            default:
                if (c >= '1' && c <= '9') {
                    throw error("a back-reference");
                }
                if (Character.isLetterOrDigit(c)) {
                    throw error("the escape '\\" + c + "'");
                }
                if (Character.isSurrogate(c)) {
                    throw error("a character outside the Basic Multilingual Plane");
                }
                return CharSet.of(c, c); // an escaped punctuation character is itself
        }
    }

    private int hex(int digits) {
        if (i + digits > p.length()) {
            throw error("a short hex escape");
        }
        try {
            int v = Integer.parseInt(p.substring(i, i + digits), 16);
            i += digits;
            return v;
        } catch (NumberFormatException e) {
            throw error("a bad hex escape");
        }
    }

    /** A set of characters as sorted, disjoint, non-adjacent ranges. */
    static final class CharSet {
        private final List<char[]> ranges = new ArrayList<>();

        static CharSet of(char lo, char hi) {
            CharSet s = new CharSet();
            s.add(lo, hi);
            return s;
        }

        int size() {
            return ranges.size();
        }

        char lo(int k) {
            return ranges.get(k)[0];
        }

        char hi(int k) {
            return ranges.get(k)[1];
        }

        void addAll(CharSet o) {
            for (char[] r : o.ranges) {
                add(r[0], r[1]);
            }
        }

        void add(char lo, char hi) {
            List<char[]> out = new ArrayList<>();
            int nlo = lo;
            int nhi = hi;
            for (char[] r : ranges) {
                if (r[1] + 1 < nlo || nhi + 1 < r[0]) {
                    out.add(r);
                } else {
                    nlo = Math.min(nlo, r[0]);
                    nhi = Math.max(nhi, r[1]);
                }
            }
            out.add(new char[] {(char) nlo, (char) nhi});
            out.sort((x, y) -> x[0] - y[0]);
            ranges.clear();
            ranges.addAll(out);
        }

        CharSet complement() {
            CharSet c = new CharSet();
            int next = 0;
            for (char[] r : ranges) {
                if (r[0] > next) {
                    c.add((char) next, (char) (r[0] - 1));
                }
                next = r[1] + 1;
            }
            if (next <= MAX) {
                c.add((char) next, MAX);
            }
            return c;
        }

        /** ECMA's '.': everything but the line terminators (Python's excludes only \n). */
        static CharSet dot() {
            CharSet s = new CharSet();
            s.add('\n', '\n');
            s.add('\r', '\r');
            s.add('\u2028', '\u2029');
            return s.complement();
        }

        static CharSet word() {
            CharSet s = new CharSet();
            s.add('a', 'z');
            s.add('A', 'Z');
            s.add('0', '9');
            s.add('_', '_');
            return s;
        }

        /** Characters any reading of \w matches (ASCII word characters and Unicode letters and numbers). */
        static CharSet wordAnywhere() {
            CharSet s = word();
            addWhere(s, c -> Character.isLetterOrDigit(c) || Character.getType(c) == Character.LETTER_NUMBER
                    || Character.getType(c) == Character.OTHER_NUMBER);
            return s;
        }

        static CharSet digitsAnywhere() {
            CharSet s = of('0', '9');
            addWhere(s, Character::isDigit);
            return s;
        }

        /** White space under both ECMA and Python readings of \s. */
        static CharSet spaceBoth() {
            CharSet s = new CharSet();
            s.add('\t', '\r');
            s.add(' ', ' ');
            s.add('\u00A0', '\u00A0');
            s.add('\u1680', '\u1680');
            s.add('\u2000', '\u200A');
            s.add('\u2028', '\u2029');
            s.add('\u202F', '\u202F');
            s.add('\u205F', '\u205F');
            s.add('\u3000', '\u3000');
            return s;
        }

        /** White space under either reading (ECMA adds U+FEFF; Python adds \x1c-\x1f and U+0085). */
        static CharSet spaceEither() {
            CharSet s = spaceBoth();
            s.add('\u001C', '\u001F');
            s.add('\u0085', '\u0085');
            s.add('\uFEFF', '\uFEFF');
            return s;
        }

        private static void addWhere(CharSet s, java.util.function.IntPredicate p) {
            int start = -1;
            for (int c = 0; c <= 0x10000; c++) {
                boolean in = c < 0x10000 && p.test(c);
                if (in && start < 0) {
                    start = c;
                } else if (!in && start >= 0) {
                    s.add((char) start, (char) (c - 1));
                    start = -1;
                }
            }
        }
    }
}
