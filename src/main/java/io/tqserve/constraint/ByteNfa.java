package io.tqserve.constraint;

import dk.brics.automaton.Automaton;
import dk.brics.automaton.State;
import dk.brics.automaton.Transition;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * A non-deterministic automaton over bytes on int arrays (states numbered from 0, the start; transitions as byte
 * ranges), as {@link JsonStringContent} builds it, and its subset construction straight into the byte-class table
 * that {@link ByteDfa#minimize} takes. The same automaton as dk.brics states and transitions cost a hash set per
 * state and a hash map per subset, most of a {@code pattern}'s or {@code patternProperties}' compile.
 */
final class ByteNfa {
    private boolean[] accept = new boolean[16];
    private int states;
    private int[] from = new int[16];
    private int[] lo = new int[16];
    private int[] hi = new int[16];
    private int[] to = new int[16];
    private int transitions;

    int newState() {
        if (states == accept.length) {
            accept = Arrays.copyOf(accept, 2 * states);
        }
        return states++;
    }

    int states() {
        return states;
    }

    void accept(int state, boolean yes) {
        accept[state] = yes;
    }

    /** A transition on the bytes {@code first..last} (0..255). */
    void add(int source, int first, int last, int target) {
        if (transitions == from.length) {
            int n = 2 * transitions;
            from = Arrays.copyOf(from, n);
            lo = Arrays.copyOf(lo, n);
            hi = Arrays.copyOf(hi, n);
            to = Arrays.copyOf(to, n);
        }
        from[transitions] = source;
        lo[transitions] = first;
        hi[transitions] = last;
        to[transitions] = target;
        transitions++;
    }

    /** The same automaton as dk.brics states (chars 0..255 standing for bytes), not deterministic. */
    Automaton toAutomaton() {
        State[] s = new State[states];
        for (int i = 0; i < states; i++) {
            s[i] = new State();
            s[i].setAccept(accept[i]);
        }
        for (int t = 0; t < transitions; t++) {
            s[from[t]].addTransition(new Transition((char) lo[t], (char) hi[t], s[to[t]]));
        }
        Automaton a = new Automaton();
        a.setInitialState(s[0]);
        a.setDeterministic(false);
        return a;
    }

    /**
     * The subset construction from state 0, refused with a {@link ConstraintBudgetException} naming {@code keyword}
     * past {@code maxStates} deterministic states, checking the thread's interrupt per state; then minimised.
     */
    ByteDfa.Minimal minimalDfa(int maxStates, String what, String keyword) {
        // byte classes: the intervals between the transitions' ends
        boolean[] cut = new boolean[257];
        cut[0] = true;
        for (int t = 0; t < transitions; t++) {
            cut[lo[t]] = true;
            cut[hi[t] + 1] = true;
        }
        int[] classOf = new int[256];
        int k = 0;
        for (int b = 0; b < 256; b++) {
            k += cut[b] ? 1 : 0;
            classOf[b] = k - 1;
        }
        // transitions by source (CSR), each with its classes
        int[] start = new int[states + 1];
        for (int t = 0; t < transitions; t++) {
            start[from[t] + 1]++;
        }
        for (int q = 0; q < states; q++) {
            start[q + 1] += start[q];
        }
        int[] order = new int[transitions];
        int[] fill = Arrays.copyOf(start, states);
        for (int t = 0; t < transitions; t++) {
            order[fill[from[t]]++] = t;
        }
        Map<Ints, Integer> index = new HashMap<>();
        ArrayDeque<int[]> work = new ArrayDeque<>();
        int[] table = new int[64 * k];
        boolean[] accepting = new boolean[64];
        int[] init = {0};
        index.put(new Ints(init), 0);
        work.add(init);
        int dfaStates = 1;
        int[][] buckets = new int[k][];
        int[] count = new int[k];
        for (int d = 0; !work.isEmpty(); d++) {
            if (Thread.currentThread().isInterrupted()) {
                throw new java.util.concurrent.CancellationException("constraint compile cancelled");
            }
            int[] set = work.poll();
            boolean acc = false;
            for (int q : set) {
                acc |= accept[q];
                for (int i = start[q]; i < start[q + 1]; i++) {
                    int t = order[i];
                    for (int c = classOf[lo[t]]; c <= classOf[hi[t]]; c++) {
                        int[] b = buckets[c];
                        if (b == null) {
                            b = buckets[c] = new int[4];
                        } else if (count[c] == b.length) {
                            b = buckets[c] = Arrays.copyOf(b, 2 * b.length);
                        }
                        b[count[c]++] = to[t];
                    }
                }
            }
            if (d == accepting.length) {
                accepting = Arrays.copyOf(accepting, 2 * d);
                table = Arrays.copyOf(table, 2 * d * k);
            }
            accepting[d] = acc;
            for (int c = 0; c < k; c++) {
                int target = -1;
                if (count[c] > 0) {
                    int[] next = sortedUnique(buckets[c], count[c]);
                    count[c] = 0;
                    Ints key = new Ints(next);
                    Integer known = index.get(key);
                    if (known == null) {
                        if (dfaStates >= maxStates) {
                            throw new ConstraintBudgetException(keyword, what + " needs more than " + maxStates
                                    + " automaton states");
                        }
                        known = dfaStates++;
                        index.put(key, known);
                        work.add(next);
                    }
                    target = known;
                }
                table[d * k + c] = target;
            }
        }
        return ByteDfa.minimize(Arrays.copyOf(table, dfaStates * k), k, classOf,
                Arrays.copyOf(accepting, dfaStates), 0);
    }

    /** The first {@code n} values of {@code b}, sorted, without repeats. */
    static int[] sortedUnique(int[] b, int n) {
        Arrays.sort(b, 0, n);
        int k = 0;
        for (int i = 0; i < n; i++) {
            if (k == 0 || b[i] != b[k - 1]) {
                b[k++] = b[i];
            }
        }
        return Arrays.copyOf(b, k);
    }

    /** An int array (a subset of NFA states as sorted numbers, a column of a table) as a hash key. */
    record Ints(int[] states, int hash) {
        Ints(int[] states) {
            this(states, Arrays.hashCode(states));
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Ints s && s.hash == hash && Arrays.equals(s.states, states);
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }
}
