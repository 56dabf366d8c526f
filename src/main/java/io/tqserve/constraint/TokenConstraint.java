package io.tqserve.constraint;

import dk.brics.automaton.Automaton;
import dk.brics.automaton.RunAutomaton;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * A compiled constraint: a minimal deterministic automaton over bytes and, per state, the tokens that keep the
 * text inside its language. Immutable and thread-safe; shared by every sequence that uses the same schema.
 *
 * <p>Budget: {@code distance[s]} is the fewest tokens that take state s to an accepting state, counting only
 * single-byte tokens (an upper bound on the true token distance). A token is allowed when the state it leads to
 * is at a distance of at most the tokens left after it, so a sequence can always finish inside its budget;
 * when the budget runs short only tokens on a shortest closing path remain.
 *
 * <p>Masks are computed on first use of a state (walking the vocabulary trie together with the automaton) and
 * kept: a schema's first requests pay for the states they visit, later ones only look the masks up.
 */
public final class TokenConstraint {
    static final int UNREACHABLE = Integer.MAX_VALUE / 2;

    private final RunAutomaton run;
    private final Vocabulary vocabulary;
    private final int[] distance;
    private final AtomicReferenceArray<Mask> masks;

    /** The tokens allowed in a state, ordered by the distance of the state each leads to. */
    record Mask(int[] tokens, int[] distances) {
        /** How many of {@link #tokens} lead to a state at most {@code budget} tokens from accepting. */
        int within(int budget) {
            int lo = 0;
            int hi = distances.length;
            while (lo < hi) { // first index whose distance exceeds the budget
                int mid = (lo + hi) >>> 1;
                if (distances[mid] <= budget) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            return lo;
        }
    }

    public TokenConstraint(Automaton automaton, Vocabulary vocabulary) {
        Automaton a = automaton.clone();
        a.minimize();
        this.run = new RunAutomaton(a);
        this.vocabulary = vocabulary;
        this.distance = distances(run, vocabulary);
        this.masks = new AtomicReferenceArray<>(run.getSize());
    }

    private static int[] distances(RunAutomaton run, Vocabulary v) {
        int n = run.getSize();
        int[][] reverse = new int[n][];
        int[] count = new int[n];
        for (int s = 0; s < n; s++) {
            for (int b = 0; b < 256; b++) {
                int t = v.hasSingleByte(b) ? run.step(s, (char) b) : -1;
                if (t >= 0) {
                    count[t]++;
                }
            }
        }
        for (int s = 0; s < n; s++) {
            reverse[s] = new int[count[s]];
        }
        Arrays.fill(count, 0);
        for (int s = 0; s < n; s++) {
            for (int b = 0; b < 256; b++) {
                int t = v.hasSingleByte(b) ? run.step(s, (char) b) : -1;
                if (t >= 0) {
                    reverse[t][count[t]++] = s;
                }
            }
        }
        int[] dist = new int[n];
        Arrays.fill(dist, UNREACHABLE);
        ArrayDeque<Integer> queue = new ArrayDeque<>();
        for (int s = 0; s < n; s++) {
            if (run.isAccept(s)) {
                dist[s] = 0;
                queue.add(s);
            }
        }
        while (!queue.isEmpty()) {
            int t = queue.poll();
            for (int s : reverse[t]) {
                if (dist[s] == UNREACHABLE) {
                    dist[s] = dist[t] + 1;
                    queue.add(s);
                }
            }
        }
        return dist;
    }

    public int initialState() {
        return run.getInitialState();
    }

    /** The fewest tokens that produce an accepted text from the start (the least max_tokens that can work). */
    public int minTokens() {
        return distance[run.getInitialState()];
    }

    public boolean accepting(int state) {
        return run.isAccept(state);
    }

    /** Whether no byte can follow in this state (the text is complete). */
    public boolean finished(int state) {
        return run.isAccept(state) && mask(state).tokens.length == 0;
    }

    int distance(int state) {
        return distance[state];
    }

    public Vocabulary vocabulary() {
        return vocabulary;
    }

    /** The state after the token's bytes, or -1 if the automaton rejects them. */
    public int step(int state, int token) {
        byte[] b = vocabulary.bytes(token);
        if (b == null || b.length == 0) {
            return -1;
        }
        int s = state;
        for (int i = 0; i < b.length && s >= 0; i++) {
            s = run.step(s, (char) (b[i] & 0xFF));
        }
        return s;
    }

    Mask mask(int state) {
        Mask m = masks.get(state);
        if (m == null) {
            m = computeMask(state);
            masks.compareAndSet(state, null, m);
        }
        return m;
    }

    /** Number of states whose mask is cached (for tests and metrics). */
    public int cachedMasks() {
        int n = 0;
        for (int i = 0; i < masks.length(); i++) {
            n += masks.get(i) != null ? 1 : 0;
        }
        return n;
    }

    public int states() {
        return run.getSize();
    }

    private Mask computeMask(int state) {
        Vocabulary v = vocabulary;
        int[] tokens = new int[64];
        int[] dists = new int[64];
        int n = 0;
        int[] nodeStack = new int[256];
        int[] stateStack = new int[256];
        // depth-first over the trie from the root (which holds no token); a child is pushed only when the
        // automaton accepts its byte from its parent's state
        nodeStack[0] = 0;
        stateStack[0] = state;
        int sp = 1;
        while (sp > 0) {
            int node = nodeStack[--sp];
            int s = stateStack[sp];
            for (int tok = v.firstToken[node]; tok >= 0; tok = v.nextToken[tok]) {
                if (n == tokens.length) {
                    tokens = Arrays.copyOf(tokens, n * 2);
                    dists = Arrays.copyOf(dists, n * 2);
                }
                tokens[n] = tok;
                dists[n++] = distance[s];
            }
            for (int c = v.firstChild[node]; c >= 0; c = v.nextSibling[c]) {
                int t = run.step(s, v.label[c]);
                if (t >= 0 && distance[t] < UNREACHABLE) {
                    if (sp == nodeStack.length) {
                        nodeStack = Arrays.copyOf(nodeStack, sp * 2);
                        stateStack = Arrays.copyOf(stateStack, sp * 2);
                    }
                    nodeStack[sp] = c;
                    stateStack[sp++] = t;
                }
            }
        }
        // order by distance (stable in token id for equal distances)
        long[] keys = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = ((long) dists[i] << 32) | tokens[i];
        }
        Arrays.sort(keys);
        int[] outTokens = new int[n];
        int[] outDists = new int[n];
        for (int i = 0; i < n; i++) {
            outTokens[i] = (int) keys[i];
            outDists[i] = (int) (keys[i] >>> 32);
        }
        return new Mask(outTokens, outDists);
    }
}
