package io.tqserve.constraint;

import dk.brics.automaton.Automaton;
import dk.brics.automaton.State;
import dk.brics.automaton.Transition;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A dk.brics automaton over characters as arrays: states numbered breadth first (the initial state 0), the
 * transitions of state q at {@code first[q]..first[q+1]}, each with its target and the range of intervals it covers
 * (indices into {@code points}, the starts of the intervals between the transitions' ends). The bounded subset
 * construction ({@link #determinize}) and the minimisation ({@link CharDfa}) work on it: on dk.brics' own states and
 * sets of them they were most of a pattern's compile.
 */
final class CharNfa {
    private static final char MAX = '\uFFFF';

    /** Whether state q accepts (one entry per state). */
    final boolean[] accept;
    /** State q's transitions are {@code first[q]..first[q+1]-1}. */
    final int[] first;
    /** Per transition: its target state, and the first and last interval it covers. */
    final int[] dest;
    final int[] fromPoint;
    final int[] toPoint;
    /** The starts of the character intervals, ascending from 0 (the last interval ends at U+FFFF). */
    final char[] points;

    CharNfa(Automaton nfa) {
        List<State> states = new ArrayList<>();
        Map<State, Integer> index = new java.util.IdentityHashMap<>();
        states.add(nfa.getInitialState());
        index.put(nfa.getInitialState(), 0);
        int transitions = 0;
        for (int i = 0; i < states.size(); i++) { // breadth first from the initial state
            for (Transition t : states.get(i).getTransitions()) {
                transitions++;
                if (!index.containsKey(t.getDest())) {
                    index.put(t.getDest(), states.size());
                    states.add(t.getDest());
                }
            }
        }
        int n = states.size();
        accept = new boolean[n];
        first = new int[n + 1];
        dest = new int[transitions];
        char[] min = new char[transitions];
        char[] max = new char[transitions];
        java.util.BitSet cuts = new java.util.BitSet(MAX + 2);
        cuts.set(0);
        int k = 0;
        for (int q = 0; q < n; q++) {
            State s = states.get(q);
            accept[q] = s.isAccept();
            first[q] = k;
            for (Transition t : s.getTransitions()) {
                dest[k] = index.get(t.getDest());
                min[k] = t.getMin();
                max[k] = t.getMax();
                cuts.set(t.getMin());
                cuts.set(t.getMax() + 1);
                k++;
            }
        }
        first[n] = k;
        cuts.clear(MAX + 1);
        points = new char[cuts.cardinality()];
        int np = 0;
        for (int c = cuts.nextSetBit(0); c >= 0; c = cuts.nextSetBit(c + 1)) {
            points[np++] = (char) c;
        }
        fromPoint = new int[transitions];
        toPoint = new int[transitions];
        for (int t = 0; t < transitions; t++) {
            fromPoint[t] = java.util.Arrays.binarySearch(points, min[t]);
            int end = java.util.Arrays.binarySearch(points, 0, np, (char) (max[t] + 1)); // max < MAX
            toPoint[t] = max[t] == MAX ? np - 1 : end - 1;
        }
    }

    /**
     * The subset construction with a bound: dk.brics' own determinization has none (an unanchored pattern can need
     * exponentially many states) and cannot be interrupted, so it is done here, stopping at {@code maxStates}: past it
     * a {@link ConstraintBudgetException} names {@code keyword} and says that {@code what} needs more states. On
     * arrays (the NFA's states numbered, a subset a sorted array of their numbers, the character intervals between
     * the transitions' ends numbered): on sets of dk.brics states it was most of a pattern's compile. Adjacent
     * intervals with the same target become one transition (what dk.brics' {@code reduce} does afterwards).
     */
    static Automaton determinize(Automaton nfa, int maxStates, String what, String keyword) {
        CharNfa a = new CharNfa(nfa);
        int np = a.points.length;
        Map<ByteNfa.Ints, State> dfa = new HashMap<>();
        ArrayDeque<int[]> work = new ArrayDeque<>();
        int[] init = {0};
        State start = new State();
        dfa.put(new ByteNfa.Ints(init), start);
        work.add(init);
        int[][] buckets = new int[np][];
        int[] fill = new int[np];
        while (!work.isEmpty()) {
            if (Thread.currentThread().isInterrupted()) {
                throw new java.util.concurrent.CancellationException("constraint compile cancelled");
            }
            int[] set = work.poll();
            State from = dfa.get(new ByteNfa.Ints(set));
            // each transition adds its target to the intervals it covers, so a subset costs the intervals its
            // transitions cover, not every interval times every transition
            int lo = np;
            int hi = -1;
            for (int q : set) {
                if (a.accept[q]) {
                    from.setAccept(true);
                }
                for (int t = a.first[q]; t < a.first[q + 1]; t++) {
                    int dest = a.dest[t];
                    lo = Math.min(lo, a.fromPoint[t]);
                    hi = Math.max(hi, a.toPoint[t]);
                    for (int n = a.fromPoint[t]; n <= a.toPoint[t]; n++) {
                        int[] b = buckets[n];
                        if (b == null) {
                            b = buckets[n] = new int[4];
                        } else if (fill[n] == b.length) {
                            b = buckets[n] = java.util.Arrays.copyOf(b, 2 * b.length);
                        }
                        b[fill[n]++] = dest;
                    }
                }
            }
            State last = null;
            char lastLo = 0;
            char lastHi = 0;
            for (int n = lo; n <= hi; n++) {
                if (fill[n] == 0) {
                    continue;
                }
                int[] next = ByteNfa.sortedUnique(buckets[n], fill[n]);
                fill[n] = 0;
                ByteNfa.Ints key = new ByteNfa.Ints(next);
                State to = dfa.get(key);
                if (to == null) {
                    if (dfa.size() >= maxStates) {
                        throw new ConstraintBudgetException(keyword, what + " needs more than " + maxStates
                                + " automaton states");
                    }
                    to = new State();
                    dfa.put(key, to);
                    work.add(next);
                }
                char cLo = a.points[n];
                char cHi = n + 1 < np ? (char) (a.points[n + 1] - 1) : MAX;
                if (to == last && lastHi + 1 == cLo) {
                    lastHi = cHi;
                } else {
                    if (last != null) {
                        from.addTransition(new Transition(lastLo, lastHi, last));
                    }
                    last = to;
                    lastLo = cLo;
                    lastHi = cHi;
                }
            }
            if (last != null) {
                from.addTransition(new Transition(lastLo, lastHi, last));
            }
        }
        Automaton out = new Automaton();
        out.setInitialState(start);
        out.setDeterministic(true);
        return out;
    }
}
