package io.tqserve.constraint;

import dk.brics.automaton.Automaton;
import dk.brics.automaton.State;
import dk.brics.automaton.Transition;

/**
 * Minimisation of a deterministic dk.brics automaton over characters by {@link ByteDfa}'s partition refinement:
 * the character intervals between the transitions' ends are the classes of a table. dk.brics' own Hopcroft (lists
 * and hash sets of states per character interval) was most of the compile of the schemas with the most {@code
 * patternProperties} classes (each class a product of the member names with a pattern, minimised); this one is
 * {@code O(k n log n)} for {@code n} states and {@code k} intervals. A non-deterministic automaton, or one whose
 * table would pass {@link #MAX_CELLS}, is left to dk.brics (its minimisation determinises first).
 */
final class CharDfa {
    private static final char MAX = '\uFFFF';

    private CharDfa() {
    }

    /** Most table cells (states times intervals) minimised here; a larger automaton goes to dk.brics. */
    static final long MAX_CELLS = 4_000_000L;

    /** The minimal automaton of {@code a}'s language (a new automaton when {@code a} is deterministic). */
    static Automaton minimal(Automaton a) {
        if (!a.isDeterministic()) {
            return byBrics(a);
        }
        CharNfa in = new CharNfa(a); // deterministic: one target per state and interval
        char[] points = in.points;
        int k = points.length;
        int n = in.accept.length;
        if ((long) n * k > MAX_CELLS) {
            return byBrics(a);
        }
        int[] table = new int[n * k];
        java.util.Arrays.fill(table, -1);
        for (int q = 0; q < n; q++) {
            for (int t = in.first[q]; t < in.first[q + 1]; t++) {
                java.util.Arrays.fill(table, q * k + in.fromPoint[t], q * k + in.toPoint[t] + 1, in.dest[t]);
            }
        }
        boolean[] accept = in.accept;
        ByteDfa.Minimal min = ByteDfa.minimize(table, k, null, accept, 0);
        State[] out = new State[min.states()];
        for (int q = 0; q < out.length; q++) {
            out[q] = new State();
            out[q].setAccept(min.accept()[q]);
        }
        for (int q = 0; q < out.length; q++) {
            int[] row = min.delta()[q];
            for (int c = 0; c < k; ) {
                int e = c;
                while (e + 1 < k && row[e + 1] == row[c]) {
                    e++;
                }
                if (row[c] >= 0) {
                    out[q].addTransition(new Transition(points[c], e + 1 < k ? (char) (points[e + 1] - 1) : MAX,
                            out[row[c]]));
                }
                c = e + 1;
            }
        }
        Automaton m = new Automaton();
        m.setInitialState(out[0]);
        m.setDeterministic(true);
        return m;
    }

    private static Automaton byBrics(Automaton a) {
        Automaton m = a.clone();
        m.minimize();
        return m;
    }
}
