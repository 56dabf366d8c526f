package io.tqserve.constraint;

import dk.brics.automaton.Automaton;
import dk.brics.automaton.State;
import dk.brics.automaton.Transition;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The lexemes of JSON text. The string-character and whitespace automata are written by hand (they are a dozen
 * states); numbers, integer ranges and formats go through {@code dk.brics.automaton} (built once per compile,
 * checked against a size bound, then turned into a byte-class table).
 */
final class JsonLexemes {
    /** One character of a JSON string's contents, counted: valid UTF-8 or an escape (no surrogate escapes). */
    static final Lexeme STRING_CHAR = stringChar();
    /** One byte of JSON whitespace, counted. */
    static final Lexeme WHITESPACE = whitespace();

    private JsonLexemes() {
    }

    private static boolean hex(int b) {
        return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F';
    }

    private static Lexeme stringChar() {
        boolean[] accept = new boolean[14];
        accept[0] = true;
        return Lexeme.table("string", true, true, 14, 0, accept, (s, b) -> switch (s) {
            case 0 -> {
                if (b >= 0x20 && b <= 0x7F && b != '"' && b != '\\') {
                    yield 0;
                } else if (b == '\\') {
                    yield 8;
                } else if (b >= 0xC2 && b <= 0xDF) {
                    yield 1;
                } else if (b == 0xE0) {
                    yield 4;
                } else if (b >= 0xE1 && b <= 0xEC || b == 0xEE || b == 0xEF) {
                    yield 2;
                } else if (b == 0xED) {
                    yield 5;
                } else if (b == 0xF0) {
                    yield 6;
                } else if (b >= 0xF1 && b <= 0xF3) {
                    yield 3;
                } else if (b == 0xF4) {
                    yield 7;
                }
                yield -1;
            }
            case 1 -> b >= 0x80 && b <= 0xBF ? 0 : -1;
            case 2 -> b >= 0x80 && b <= 0xBF ? 1 : -1;
            case 3 -> b >= 0x80 && b <= 0xBF ? 2 : -1;
            case 4 -> b >= 0xA0 && b <= 0xBF ? 1 : -1;
            case 5 -> b >= 0x80 && b <= 0x9F ? 1 : -1;
            case 6 -> b >= 0x90 && b <= 0xBF ? 2 : -1;
            case 7 -> b >= 0x80 && b <= 0x8F ? 2 : -1;
            case 8 -> "\"\\/bfnrt".indexOf(b) >= 0 ? 0 : b == 'u' ? 9 : -1;
            case 9 -> b == 'd' || b == 'D' ? 10 : hex(b) ? 11 : -1;
            case 10 -> b >= '0' && b <= '7' ? 12 : -1;
            case 11 -> hex(b) ? 12 : -1;
            case 12 -> hex(b) ? 13 : -1;
            case 13 -> hex(b) ? 0 : -1;
            default -> -1;
        });
    }

    private static Lexeme whitespace() {
        return Lexeme.table("whitespace", true, true, 1, 0, new boolean[] {true},
                (s, b) -> b == ' ' || b == '\n' || b == '\r' || b == '\t' ? 0 : -1);
    }

    /**
     * Any bytes whose first non-whitespace byte is none of {@code excluded} (state 0: blank so far; 1: past it).
     * Never {@link Grammar#SPECIAL_LEAD}: free text holds no special token.
     */
    static Lexeme textNotOpeningWith(String excluded) {
        return Lexeme.table("text", false, true, 2, 0, new boolean[] {true, true}, (s, b) -> {
            if (b == Grammar.SPECIAL_LEAD) {
                return -1;
            }
            if (s == 1) {
                return 1;
            }
            if (b == ' ' || b == '\n' || b == '\r' || b == '\t') {
                return 0;
            }
            return excluded.indexOf(b) >= 0 ? -1 : 1;
        });
    }

    /**
     * Any bytes that never contain {@code marker} (a Knuth-Morris-Pratt automaton; every state may end), nor
     * {@link Grammar#SPECIAL_LEAD}: free text holds no special token.
     */
    static Lexeme textWithout(String marker) {
        byte[] m = marker.getBytes(StandardCharsets.UTF_8);
        int n = m.length;
        int[] fail = new int[n + 1];
        for (int i = 1, k = 0; i < n; i++) {
            while (k > 0 && m[i] != m[k]) {
                k = fail[k];
            }
            if (m[i] == m[k]) {
                k++;
            }
            fail[i + 1] = k;
        }
        boolean[] accept = new boolean[n];
        java.util.Arrays.fill(accept, true);
        return Lexeme.table("text", false, true, n, 0, accept, (s, b) -> {
            if (b == Grammar.SPECIAL_LEAD) {
                return -1;
            }
            int k = s;
            while (k > 0 && (m[k] & 0xFF) != b) {
                k = fail[k];
            }
            if ((m[k] & 0xFF) == b) {
                k++;
            }
            return k == n ? -1 : k;
        });
    }

    /**
     * A dk.brics automaton (chars 0..255 standing for bytes) as a plain lexeme, refused when its minimal DFA has
     * more than {@code maxStates} states.
     */
    static Lexeme of(String name, Automaton automaton, int maxStates, String keyword) {
        // dk.brics' determinization (inside minimize) has no bound and ignores interrupts: a byte automaton that is
        // not yet deterministic (a UTF-8 expansion) goes through the bounded, interruptible subset construction
        Automaton a = automaton.isDeterministic() ? automaton
                : CharNfa.determinize(automaton, 16 * maxStates, "the automaton of " + name, keyword);
        if (a.getNumberOfStates() > 16 * maxStates) { // bound the table before building it
            throw new ConstraintBudgetException(keyword, "the automaton of " + name + " has " + a.getNumberOfStates()
                    + " states before minimisation (at most " + 16 * maxStates + ")");
        }
        List<State> states = new ArrayList<>(a.getStates());
        states.remove(a.getInitialState());
        states.addFirst(a.getInitialState());
        Map<State, Integer> index = new HashMap<>();
        for (int i = 0; i < states.size(); i++) {
            index.put(states.get(i), i);
        }
        // byte classes: the intervals between the transitions' ends
        boolean[] cut = new boolean[257];
        cut[0] = true;
        for (State s : states) {
            for (Transition t : s.getTransitions()) {
                if (t.getMin() <= 255) {
                    cut[t.getMin()] = true;
                    cut[Math.min(256, t.getMax() + 1)] = true;
                }
            }
        }
        int[] classOf = new int[256];
        int nc = 0;
        for (int b = 0; b < 256; b++) {
            nc += cut[b] ? 1 : 0;
            classOf[b] = nc - 1;
        }
        int[] table = new int[states.size() * nc];
        java.util.Arrays.fill(table, -1);
        boolean[] accepting = new boolean[states.size()];
        for (int i = 0; i < states.size(); i++) {
            State s = states.get(i);
            accepting[i] = s.isAccept();
            for (Transition t : s.getTransitions()) {
                if (t.getMin() <= 255) {
                    int to = index.get(t.getDest());
                    for (int c = classOf[t.getMin()]; c <= classOf[Math.min(255, (int) t.getMax())]; c++) {
                        table[i * nc + c] = to;
                    }
                }
            }
        }
        return of(name, ByteDfa.minimize(table, nc, classOf, accepting, 0), maxStates, keyword);
    }

    /**
     * A byte automaton on arrays (a string's contents: {@link JsonStringContent#nfa}) as a plain lexeme: the bounded
     * subset construction (at most {@code 16 * maxStates} states), refused when its minimal DFA has more than {@code
     * maxStates} states.
     */
    static Lexeme of(String name, ByteNfa automaton, int maxStates, String keyword) {
        return of(name, automaton.minimalDfa(16 * maxStates, "the automaton of " + name, keyword), maxStates,
                keyword);
    }

    private static Lexeme of(String name, ByteDfa.Minimal min, int maxStates, String keyword) {
        if (min.states() > maxStates) {
            throw new ConstraintBudgetException(keyword, "the automaton of " + name + " has " + min.states()
                    + " states (at most " + maxStates + ")");
        }
        int n = min.states();
        int[][] delta = min.delta();
        boolean[] accept = min.accept();
        // wide when some state takes many bytes (an unanchored pattern, a uri): its masks are then cached per state
        // from a walk of the vocabulary with the automaton alone, not walked with the parser token by token
        int fanout = 0;
        for (int[] row : delta) {
            int k = 0;
            for (int t : row) {
                k += t >= 0 ? 1 : 0;
            }
            fanout = Math.max(fanout, k);
        }
        Lexeme x = Lexeme.table(name, false, fanout >= Lexeme.WIDE_FANOUT, n, 0, accept, (s, b) -> delta[s][b]);
        x.keyword = keyword;
        return x;
    }

    /** The UTF-8 bytes of {@code s} as one char per byte (the alphabet of the dk.brics automata). */
    static String latin(String s) {
        return new String(s.getBytes(StandardCharsets.UTF_8), StandardCharsets.ISO_8859_1);
    }

    /** {@code s} as a JSON string literal (the escapes the string lexeme allows). */
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
