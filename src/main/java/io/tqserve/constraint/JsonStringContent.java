package io.tqserve.constraint;

import dk.brics.automaton.Automaton;
import dk.brics.automaton.State;
import dk.brics.automaton.Transition;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * An automaton over a string's characters (UTF-16 units of the Basic Multilingual Plane, no surrogates) turned
 * into an automaton over the bytes of the JSON string's contents (between the quotes): each character as UTF-8,
 * except {@code "} and {@code \} and the control characters, which are written as escapes the way Python's
 * {@code json.dumps} writes them ({@code \"}, {@code \\}, {@code \n}, {@code \r}, {@code \t}, {@code \b},
 * {@code \f}, else a backslash, {@code u00} and two lower-case hex digits). One spelling per character keeps the byte language exactly
 * the image of the character language. UTF-8 is order-preserving, so a character range becomes a few byte-range
 * paths (the usual split at the lead-byte boundaries).
 */
final class JsonStringContent {
    private final int maxStates;
    private final String what;
    private final String keyword;
    private final ByteNfa nfa = new ByteNfa();

    private JsonStringContent(int maxStates, String what, String keyword) {
        this.maxStates = maxStates;
        this.what = what;
        this.keyword = keyword;
    }

    /**
     * The byte automaton of {@code chars} (non-deterministic: see below), refused with a
     * {@link ConstraintBudgetException} naming {@code keyword} once its construction passes {@code maxStates} states:
     * a character automaton with many states and wide classes expands to many UTF-8 paths per state.
     */
    static Automaton of(Automaton chars, int maxStates, String what, String keyword) {
        return nfa(chars, maxStates, what, keyword).toAutomaton();
    }

    /** As {@link #of}, on arrays ({@link ByteNfa}: what {@link JsonLexemes#of(String, ByteNfa, int, String)} takes). */
    static ByteNfa nfa(Automaton chars, int maxStates, String what, String keyword) {
        JsonStringContent c = new JsonStringContent(maxStates, what, keyword);
        c.build(chars);
        return c.nfa;
    }

    private int state() {
        int states = nfa.states() + 1;
        if (states > maxStates) {
            throw new ConstraintBudgetException(keyword, what + " needs more than " + maxStates
                    + " automaton states (UTF-8 expansion)");
        }
        if ((states & 4095) == 0 && Thread.currentThread().isInterrupted()) {
            throw new java.util.concurrent.CancellationException("constraint compile cancelled");
        }
        return nfa.newState();
    }

    private void build(Automaton chars) {
        Automaton a = chars; // read only: a DFA as it is, else a deterministic copy
        if (!a.isDeterministic()) {
            a = chars.clone();
            a.determinize();
        }
        Map<State, Integer> map = new HashMap<>();
        map.put(a.getInitialState(), state()); // the start: state 0
        java.util.Set<State> all = a.getStates();
        for (State s : all) {
            if (!map.containsKey(s)) {
                map.put(s, state());
            }
            nfa.accept(map.get(s), s.isAccept());
        }
        for (State s : all) {
            int from = map.get(s);
            for (Transition tr : s.getTransitions()) {
                range(from, map.get(tr.getDest()), tr.getMin(), tr.getMax());
            }
        }
        // Left non-deterministic on purpose: the UTF-8 paths of one state's ranges share lead bytes, and dk.brics'
        // determinization (inside its minimize) has no bound and ignores interrupts; on a pattern with wide
        // character classes under a long length bound it ran for minutes. JsonLexemes.of determinizes it with the
        // bounded, interruptible subset construction and refuses it past its state budget. No dead-state removal:
        // ByteDfa's minimisation drops dead states.
    }

    private void range(int from, int to, int lo, int hi) {
        for (int c = lo; c <= Math.min(hi, 0x1F); c++) { // control characters: escapes
            path(from, to, escape(c));
        }
        lo = Math.max(lo, 0x20);
        if (lo > hi) {
            return;
        }
        for (int special : new int[] {'"', '\\'}) {
            if (lo <= special && special <= hi) {
                if (lo < special) {
                    utf8(from, to, lo, special - 1);
                }
                path(from, to, escape(special));
                lo = special + 1;
            }
        }
        if (lo > hi) {
            return;
        }
        // never a surrogate code unit: strings here are BMP only
        if (lo <= 0xDFFF && hi >= 0xD800) {
            if (lo < 0xD800) {
                utf8(from, to, lo, 0xD7FF);
            }
            if (hi > 0xDFFF) {
                utf8(from, to, 0xE000, hi);
            }
            return;
        }
        utf8(from, to, lo, hi);
    }

    static byte[] escape(int c) {
        String s = switch (c) {
            case '"' -> "\\\"";
            case '\\' -> "\\\\";
            case '\n' -> "\\n";
            case '\r' -> "\\r";
            case '\t' -> "\\t";
            case '\b' -> "\\b";
            case '\f' -> "\\f";
            default -> String.format("\\u%04x", c);
        };
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    private void path(int from, int to, byte[] b) {
        int s = from;
        for (int k = 0; k < b.length; k++) {
            int next = k == b.length - 1 ? to : state();
            nfa.add(s, b[k] & 0xFF, b[k] & 0xFF, next);
            s = next;
        }
    }

    /** Code points lo..hi (no surrogates, at least 0x20) as UTF-8 byte paths. */
    private void utf8(int from, int to, int lo, int hi) {
        int[] bounds = {0x7F, 0x7FF, 0xFFFF};
        for (int b : bounds) {
            if (lo <= b && hi > b) {
                utf8(from, to, lo, b);
                utf8(from, to, b + 1, hi);
                return;
            }
        }
        sequences(from, to, encode(lo), encode(hi), 0);
    }

    private static int[] encode(int c) {
        byte[] b = new String(Character.toChars(c)).getBytes(StandardCharsets.UTF_8);
        int[] out = new int[b.length];
        for (int k = 0; k < b.length; k++) {
            out[k] = b[k] & 0xFF;
        }
        return out;
    }

    /** Every byte sequence between lo and hi (same length, lexicographic order) from position k on. */
    private void sequences(int from, int to, int[] lo, int[] hi, int k) {
        int n = lo.length;
        if (k == n - 1) {
            nfa.add(from, lo[k], hi[k], to);
            return;
        }
        if (lo[k] == hi[k]) {
            int mid = state();
            nfa.add(from, lo[k], lo[k], mid);
            sequences(mid, to, lo, hi, k + 1);
            return;
        }
        int[] top = lo.clone(); // lo[k] followed by lo's tail up to the largest continuation bytes
        int[] bottom = hi.clone(); // hi[k] followed by the smallest continuation bytes up to hi's tail
        for (int j = k + 1; j < n; j++) {
            top[j] = 0xBF;
            bottom[j] = 0x80;
        }
        int a = state();
        nfa.add(from, lo[k], lo[k], a);
        sequences(a, to, lo, top, k + 1);
        if (hi[k] - lo[k] >= 2) {
            int s = from;
            for (int j = k; j < n; j++) {
                int next = j == n - 1 ? to : state();
                if (j == k) {
                    nfa.add(s, lo[k] + 1, hi[k] - 1, next);
                } else {
                    nfa.add(s, 0x80, 0xBF, next);
                }
                s = next;
            }
        }
        int b = state();
        nfa.add(from, hi[k], hi[k], b);
        sequences(b, to, bottom, hi, k + 1);
    }
}
