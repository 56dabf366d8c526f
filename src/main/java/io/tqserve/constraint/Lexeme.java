package io.tqserve.constraint;

import java.util.Arrays;

/**
 * A regular piece of the output scanned byte by byte: a deterministic automaton over bytes. Two kinds:
 *
 * <ul>
 *   <li><b>counted</b>: the automaton reads one unit (a character of a JSON string, one whitespace byte) and
 *       returns to its start state when the unit is complete; the parser counts units started against the
 *       {@code min..max} of the grammar element, so {@code maxLength: 10000} is one counter, not 10000 states;</li>
 *   <li><b>plain</b>: an automaton whose accepting states may end the lexeme (a number, an integer range, a
 *       {@code format}, an {@code enum} of strings).</li>
 * </ul>
 *
 * <p>A <b>wide</b> lexeme (string contents, free text, whitespace, a {@code pattern} or {@code format} with a state that
 * takes {@link #WIDE_FANOUT} bytes or more) lets a large share of the vocabulary through in a state; its token masks
 * are computed by walking the vocabulary trie with the automaton alone and cached per state (see
 * {@link TokenConstraint}). Lexemes are immutable.
 */
abstract class Lexeme {
    static final int DEAD = -1;
    /**
     * A lexeme with a state that takes this many distinct bytes is wide. Low enough for a class of letters and
     * digits ({@code [a-z\d./-]+}, an e-mail pattern, hexadecimal): walked with the parser, the tokens such a state
     * takes (tens of thousands of Qwen3's) cost milliseconds at every step; walked once per state with the automaton
     * alone and cached, the steps after cost microseconds.
     */
    static final int WIDE_FANOUT = 16;

    final String name;
    final boolean counted;
    final boolean wide;
    /** The schema keyword this lexeme enforces (named when its masks exceed a budget); set before publication. */
    String keyword = "schema";
    private volatile byte[][] completions;
    private volatile long[][] firstBytes;

    Lexeme(String name, boolean counted, boolean wide) {
        this.name = name;
        this.counted = counted;
        this.wide = wide;
    }

    abstract int start();

    /** The state after byte {@code b} (0..255), or {@link #DEAD}. */
    abstract int step(int state, int b);

    /** Plain lexemes: whether the lexeme may end in this state. Counted: whether a unit is complete. */
    abstract boolean accepting(int state);

    abstract int states();

    /** Calls {@code to.accept(b, t)} for each byte b with a transition to state t (override when sparse). */
    void successors(int state, java.util.function.BiConsumer<Integer, Integer> to) {
        for (int b = 0; b < 256; b++) {
            int t = step(state, b);
            if (t >= 0) {
                to.accept(b, t);
            }
        }
    }

    /**
     * Writes to {@code out} (256 long) the states that the bytes lead to from {@code state}, at least one byte of
     * every target (repeats allowed), and returns their number: the graph of the automaton for its searches, without
     * the boxing of {@link #successors}.
     */
    int targets(int state, int[] out) {
        int k = 0;
        for (int b = 0; b < 256; b++) {
            int t = step(state, b);
            if (t >= 0) {
                out[k++] = t;
            }
        }
        return k;
    }

    /** Estimated bytes of memory. */
    abstract long bytes();

    /** The class of byte {@code b}: bytes of one class step alike from every state (by default, each its own). */
    int byteClass(int b) {
        return b;
    }

    private static final boolean[] UNKNOWN = new boolean[0];
    private volatile boolean[] sliceSafe = UNKNOWN;

    /**
     * Whether {@code state} is safe for the vocabulary's general slice ({@link StringSlice}); computed for all states
     * at the first call, within {@code maxWork} steps (charged to {@code budget}), else never safe.
     */
    final boolean sliceSafe(int state, long maxWork, MaskBudget budget) {
        boolean[] s = sliceSafe;
        if (s == UNKNOWN) {
            s = StringSlice.safeStates(this, maxWork, budget);
            sliceSafe = s;
        }
        return s != null && s[state];
    }

    /**
     * A lexeme that reads on from {@code state} exactly as this one does, for sharing cached masks across lexemes
     * (this one when there is none); {@link #sharedState} is the state there.
     */
    Lexeme sharedLexeme(int state) {
        return this;
    }

    int sharedState(int state) {
        return state;
    }

    /**
     * The shortest bytes from {@code state} to an accepting state (counted lexemes: to the end of the current unit;
     * from the start state, a whole shortest unit), the lexicographically smallest of them. All states' answers
     * come from one breadth-first search backwards from the accepting states ({@link #distances()}), so the cost is
     * one pass over the automaton's transitions, not one search per state.
     */
    final byte[] completion(int state) {
        byte[][] c = completions;
        if (c == null) {
            c = new byte[states()][];
            completions = c;
        }
        byte[] r = c[state];
        if (r == null) {
            r = shortest(state, counted && state == start());
            c[state] = r;
        }
        return r;
    }

    private volatile int[] distances;

    /** Per state, the fewest bytes to an accepting state (-1: none), by a backward breadth-first search. */
    final int[] distances() {
        int[] d = distances;
        if (d != null) {
            return d;
        }
        int n = states();
        // predecessors as lists over all transitions (a transition per byte class: the search needs no more)
        int[] count = new int[n + 1];
        int[] out = new int[256];
        for (int s = 0; s < n; s++) {
            int k = targets(s, out);
            for (int i = 0; i < k; i++) {
                count[out[i] + 1]++;
            }
        }
        for (int i = 0; i < n; i++) {
            count[i + 1] += count[i];
        }
        int[] pred = new int[count[n]];
        int[] fill = java.util.Arrays.copyOf(count, n);
        for (int s = 0; s < n; s++) {
            int k = targets(s, out);
            for (int i = 0; i < k; i++) {
                pred[fill[out[i]]++] = s;
            }
        }
        d = new int[n];
        Arrays.fill(d, -1);
        int[] queue = new int[n];
        int head = 0;
        int tail = 0;
        for (int s = 0; s < n; s++) {
            if (accepting(s)) {
                d[s] = 0;
                queue[tail++] = s;
            }
        }
        while (head < tail) {
            int t = queue[head++];
            for (int i = count[t]; i < count[t + 1]; i++) {
                int p = pred[i];
                if (d[p] < 0) {
                    d[p] = d[t] + 1;
                    queue[tail++] = p;
                }
            }
        }
        distances = d;
        return d;
    }

    /** Shortest bytes to an accepting state; with {@code unit}, at least one byte (a whole unit from the start). */
    private byte[] shortest(int from, boolean unit) {
        int[] d = distances();
        if (!unit && accepting(from)) {
            return new byte[0];
        }
        // the first byte: the smallest whose target is nearest (from the start of a unit, at least one byte)
        int[] best = {-1, Integer.MAX_VALUE};
        successors(from, (b, t) -> {
            if (d[t] >= 0 && d[t] < best[1]) {
                best[0] = b;
                best[1] = d[t];
            }
        });
        if (best[0] < 0) {
            return null;
        }
        byte[] out = new byte[best[1] + 1];
        out[0] = (byte) best[0];
        int s = step(from, best[0]);
        for (int i = 1; i < out.length; i++) {
            int want = d[s] - 1;
            int[] pick = {-1};
            successors(s, (b, t) -> {
                if (pick[0] < 0 && d[t] == want) {
                    pick[0] = b;
                }
            });
            out[i] = (byte) pick[0];
            s = step(s, pick[0]);
        }
        return out;
    }

    /** The most bytes any state needs to reach an accepting state (an upper bound of its completion's tokens). */
    final int maxDistance() {
        int m = 0;
        for (int x : distances()) {
            m = Math.max(m, x);
        }
        return m;
    }

    /** The bytes that may follow in {@code state} as a 256-bit set (memoised per state). */
    final long[] firstBytes(int state) {
        long[][] f = firstBytes;
        if (f == null) {
            f = new long[states()][];
            firstBytes = f;
        }
        long[] r = f[state];
        if (r == null) {
            long[] bits = new long[4];
            successors(state, (b, t) -> bits[b >>> 6] |= 1L << b);
            r = bits;
            f[state] = r;
        }
        return r;
    }

    @Override
    public String toString() {
        return name;
    }

    /** A deterministic automaton as a table over byte classes. */
    static final class Table extends Lexeme {
        private final byte[] classOf;
        private final int classes;
        private final int[] next;
        private final boolean[] accept;
        private final int start;

        Table(String name, boolean counted, boolean wide, int[] classOf, int classes, int[] next, boolean[] accept,
                int start) {
            super(name, counted, wide);
            this.classOf = new byte[256];
            for (int b = 0; b < 256; b++) {
                this.classOf[b] = (byte) classOf[b];
            }
            this.classes = classes;
            this.next = next;
            this.accept = accept;
            this.start = start;
        }

        @Override
        int start() {
            return start;
        }

        @Override
        int step(int state, int b) {
            return next[state * classes + (classOf[b] & 0xFF)];
        }

        @Override
        boolean accepting(int state) {
            return accept[state];
        }

        @Override
        int byteClass(int b) {
            return classOf[b] & 0xFF;
        }

        @Override
        int targets(int state, int[] out) {
            int k = 0;
            for (int c = 0, at = state * classes; c < classes; c++) {
                int t = next[at + c];
                if (t >= 0) {
                    out[k++] = t;
                }
            }
            return k;
        }

        @Override
        int states() {
            return accept.length;
        }

        @Override
        long bytes() {
            return 256 + 4L * next.length + accept.length + 64;
        }
    }

    /**
     * Builds a {@link Table} from transitions given per state as a function of the byte (used for the hand-written
     * automata and for dk.brics automata): bytes with the same column over all states share a class.
     */
    static Table table(String name, boolean counted, boolean wide, int states, int start, boolean[] accept,
            java.util.function.IntBinaryOperator delta) {
        int[] classOf = new int[256];
        java.util.Map<ByteNfa.Ints, Integer> classes = new java.util.HashMap<>();
        java.util.List<Integer> representative = new java.util.ArrayList<>();
        for (int b = 0; b < 256; b++) {
            int[] col = new int[states];
            for (int s = 0; s < states; s++) {
                col[s] = delta.applyAsInt(s, b);
            }
            ByteNfa.Ints key = new ByteNfa.Ints(col);
            Integer c = classes.get(key);
            if (c == null) {
                c = classes.size();
                classes.put(key, c);
                representative.add(b);
            }
            classOf[b] = c;
        }
        int k = classes.size();
        if (k > 255) {
            throw new IllegalStateException("too many byte classes");
        }
        int[] next = new int[states * k];
        for (int s = 0; s < states; s++) {
            for (int c = 0; c < k; c++) {
                next[s * k + c] = delta.applyAsInt(s, representative.get(c));
            }
        }
        return new Table(name, counted, wide, classOf, k, next, accept, start);
    }

    /**
     * A sorted set of byte strings as a trie automaton (an {@code enum} of many strings): states are trie nodes,
     * children contiguous and sorted, so memory is linear in the strings' total length.
     */
    static final class Strings extends Lexeme {
        private final int[] childStart;
        private final byte[] label;
        private final boolean[] end;

        Strings(String name, java.util.List<byte[]> strings) {
            super(name, false, false);
            java.util.List<byte[]> sorted = new java.util.ArrayList<>(strings);
            sorted.sort(Arrays::compareUnsigned);
            int nodes = 1;
            int maxLen = 0;
            for (int i = 0; i < sorted.size(); i++) {
                int common = i == 0 ? 0 : commonPrefix(sorted.get(i - 1), sorted.get(i));
                nodes += sorted.get(i).length - common;
                maxLen = Math.max(maxLen, sorted.get(i).length);
            }
            childStart = new int[nodes + 1];
            Arrays.fill(childStart, -1);
            label = new byte[nodes];
            end = new boolean[nodes];
            // depth by depth over the sorted strings: the strings below a node are contiguous and nodes of a
            // depth are created in sorted order, so the numbering is breadth first with each node's children
            // consecutive and sorted by byte
            int m = sorted.size();
            int[] nodeOf = new int[m];
            for (int i = 0; i < m; i++) {
                if (sorted.get(i).length == 0) {
                    end[0] = true;
                }
            }
            int next = 1;
            for (int d = 0; d < maxLen; d++) {
                int prevParent = -1;
                int prevNode = -1;
                byte prevByte = 0;
                for (int i = 0; i < m; i++) {
                    byte[] s = sorted.get(i);
                    if (s.length <= d) {
                        continue;
                    }
                    int parent = nodeOf[i];
                    int node;
                    if (parent == prevParent && s[d] == prevByte) {
                        node = prevNode;
                    } else {
                        node = next++;
                        label[node] = s[d];
                        if (childStart[parent] < 0) {
                            childStart[parent] = node;
                        }
                    }
                    if (s.length == d + 1) {
                        end[node] = true;
                    }
                    prevParent = parent;
                    prevByte = s[d];
                    prevNode = node;
                    nodeOf[i] = node;
                }
            }
            childStart[nodes] = nodes;
            for (int n = nodes - 1; n >= 0; n--) {
                if (childStart[n] < 0) {
                    childStart[n] = childStart[n + 1];
                }
            }
        }

        private static int commonPrefix(byte[] a, byte[] b) {
            int n = Math.min(a.length, b.length);
            int i = 0;
            while (i < n && a[i] == b[i]) {
                i++;
            }
            return i;
        }

        @Override
        int start() {
            return 0;
        }

        @Override
        int step(int state, int b) {
            int lo = childStart[state];
            int hi = childStart[state + 1] - 1;
            while (lo <= hi) {
                int mid = (lo + hi) >>> 1;
                int l = label[mid] & 0xFF;
                if (l < b) {
                    lo = mid + 1;
                } else if (l > b) {
                    hi = mid - 1;
                } else {
                    return mid;
                }
            }
            return DEAD;
        }

        @Override
        boolean accepting(int state) {
            return end[state];
        }

        @Override
        void successors(int state, java.util.function.BiConsumer<Integer, Integer> to) {
            for (int c = childStart[state]; c < childStart[state + 1]; c++) {
                to.accept(label[c] & 0xFF, c);
            }
        }

        @Override
        int targets(int state, int[] out) {
            int k = 0;
            for (int c = childStart[state]; c < childStart[state + 1]; c++) {
                out[k++] = c;
            }
            return k;
        }

        @Override
        int states() {
            return end.length;
        }

        @Override
        long bytes() {
            return 5L * end.length + 4L * childStart.length + 64;
        }
    }
}
