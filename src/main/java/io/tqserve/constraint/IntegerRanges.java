package io.tqserve.constraint;

import dk.brics.automaton.Automaton;
import dk.brics.automaton.State;
import dk.brics.automaton.Transition;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The texts of the integers in a range, written without leading zeros and never as {@code -0}, as a minimal
 * deterministic dk.brics automaton built state by state (dk.brics has no such construction: {@code
 * makeMinInteger}/{@code makeMaxInteger} allow leading zeros, and its regular expressions minimise every
 * sub-expression on the way, which made an integer range cost milliseconds).
 *
 * <p>A state is the set of digit strings that may still follow: per remaining length {@code r}, the r-digit
 * strings (leading zeros allowed) between two bounds {@code x..y}, an interval because the texts of one length
 * order as their values. The start has one interval per length of the range (the first and the last clipped to
 * the bounds, the others from {@code 10^(L-1)}, so no text has a leading zero); a digit {@code d} keeps of each
 * interval with {@code x[0] <= d <= y[0]} its tail, its lower bound {@code x}'s tail when {@code d = x[0]} (else
 * zeros) and its upper bound {@code y}'s tail when {@code d = y[0]} (else nines). States are identified by their
 * intervals, so two prefixes with the same future share a state: the automaton is minimal, a few dozen states for
 * any range of longs.
 */
final class IntegerRanges {
    private final Map<String, State> states = new HashMap<>();

    private IntegerRanges() {
    }

    /** Integers in [lo, hi] (lo &lt;= hi, neither {@link Long#MIN_VALUE}). */
    static Automaton of(long lo, long hi) {
        if (lo > hi || lo == Long.MIN_VALUE) {
            throw new IllegalArgumentException("integer range [" + lo + ", " + hi + "]");
        }
        IntegerRanges b = new IntegerRanges();
        State start = hi >= 0 ? b.state(naturals(Math.max(lo, 0), hi)) : new State();
        if (lo < 0) {
            State negative = b.state(naturals(Math.max(1, -Math.min(hi, -1)), -lo));
            if (hi >= 0) {
                // the start reads digits as the non-negative part's start: a copy of it with the sign besides, so
                // no state of the non-negative part gains a '-'
                State s = new State();
                s.setAccept(start.isAccept());
                for (Transition t : start.getTransitions()) {
                    s.addTransition(t);
                }
                start = s;
            }
            start.addTransition(new Transition('-', negative));
        }
        Automaton a = new Automaton();
        a.setInitialState(start);
        a.setDeterministic(true);
        return a;
    }

    /** The intervals of the naturals in [a, b] (0 &lt;= a &lt;= b), one per text length, shortest first. */
    private static List<String[]> naturals(long a, long b) {
        String sa = Long.toString(a);
        String sb = Long.toString(b);
        List<String[]> parts = new ArrayList<>();
        for (int len = sa.length(); len <= sb.length(); len++) {
            String from = len == sa.length() ? sa : "1" + "0".repeat(len - 1);
            String to = len == sb.length() ? sb : "9".repeat(len);
            if (from.length() == to.length() && from.compareTo(to) <= 0) {
                parts.add(new String[] {from, to});
            }
        }
        return parts;
    }

    /** The state whose remaining texts are {@code parts} (non-empty intervals of distinct lengths, shortest first). */
    private State state(List<String[]> parts) {
        StringBuilder key = new StringBuilder();
        for (String[] p : parts) {
            key.append(p[0]).append('-').append(p[1]).append('|');
        }
        String k = key.toString();
        State s = states.get(k);
        if (s != null) {
            return s;
        }
        s = new State();
        states.put(k, s);
        State[] next = new State[10];
        for (int d = 0; d < 10; d++) {
            char c = (char) ('0' + d);
            List<String[]> after = new ArrayList<>();
            for (String[] p : parts) {
                String x = p[0];
                String y = p[1];
                int r = x.length();
                if (r == 0) {
                    s.setAccept(true);
                    continue;
                }
                if (x.charAt(0) <= c && c <= y.charAt(0)) {
                    after.add(new String[] {c == x.charAt(0) ? x.substring(1) : "0".repeat(r - 1),
                            c == y.charAt(0) ? y.substring(1) : "9".repeat(r - 1)});
                }
            }
            next[d] = after.isEmpty() ? null : state(after);
        }
        for (int d = 0; d < 10; ) {
            int e = d;
            while (e + 1 < 10 && next[e + 1] == next[d]) {
                e++;
            }
            if (next[d] != null) {
                s.addTransition(new Transition((char) ('0' + d), (char) ('0' + e), next[d]));
            }
            d = e + 1;
        }
        return s;
    }
}
