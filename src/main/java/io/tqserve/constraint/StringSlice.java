package io.tqserve.constraint;

import java.util.Arrays;

/**
 * The general slice of a vocabulary (after LLGuidance's slicer): the tokens whose bytes are characters a JSON string
 * holds as they are, i.e. UTF-8 of the Basic Multilingual Plane but {@code "}, {@code \} and the control characters
 * (a token may end inside a character). With Qwen3's vocabulary that is 144,852 of 151,669 tokens; the rest of the
 * trie, the nodes with a token outside the slice below them, is 12,399 of 333,107 nodes.
 *
 * <p>A lexeme state that is <i>safe</i> for the slice (every string of such characters, read from it, stays inside
 * the lexeme: an unanchored pattern, a {@code .*} part, most of a {@code format}) has every slice token inside, so
 * the walk of its mask ({@link LexemeMasks}) starts from the slice's bitset and visits only {@link #rest}, the part of
 * the trie that holds the other tokens; where the lexeme may end is found there too as long as no byte of what
 * follows can be a slice byte (a string's closing quote). The entry is the same as the walk of the whole trie's.
 * The slice depends on the vocabulary and a fixed character class only, so it is shared by every constraint over
 * the vocabulary: it reveals nothing of any schema.
 */
final class StringSlice {
    /** States of the class automaton: between characters, 1 or 2 continuation bytes left, after E0, after ED. */
    static final int STATES = 5;
    /** The string lexeme's states the class automaton keeps (no 4-byte characters, no escapes), in its order. */
    private static final int[] STRING_STATE = {0, 1, 2, 4, 5};
    private static final int[] CLASS_STATE = {0, 1, 2, -1, 3, 4, -1, -1, -1, -1, -1, -1, -1, -1};
    /** Bytes that some state of the class automaton takes (a follow set meeting none of them keeps exits apart). */
    private static final long[] LIVE = new long[4];

    static {
        for (int g = 0; g < STATES; g++) {
            for (int b = 0; b < 256; b++) {
                if (step(g, b) >= 0) {
                    LIVE[b >>> 6] |= 1L << b;
                }
            }
        }
    }

    /** Tokens of the slice, as a bitset over the vocabulary. */
    final long[] tokens;
    /** The trie's nodes with a token outside the slice at or below them, in preorder (ancestors included). */
    final Vocabulary.Preorder rest;

    StringSlice(Vocabulary v) {
        tokens = new long[(v.size() + 63) >>> 6];
        for (int t = 0; t < v.size(); t++) {
            byte[] b = v.bytes(t);
            if (b == null || b.length == 0) {
                continue;
            }
            int g = 0;
            for (int i = 0; i < b.length && g >= 0; i++) {
                g = step(g, b[i] & 0xFF);
            }
            if (g >= 0) {
                tokens[t >>> 6] |= 1L << t;
            }
        }
        Vocabulary.Preorder all = v.preorder;
        int n = all.label.length;
        int[] outside = new int[n + 1]; // prefix sums over preorder of "a token outside the slice ends here"
        for (int i = 0; i < n; i++) {
            boolean own = false;
            for (int k = all.tokenStart[i]; k < all.tokenStart[i + 1]; k++) {
                int t = all.tokens[k];
                own |= (tokens[t >>> 6] & (1L << t)) == 0;
            }
            outside[i + 1] = outside[i] + (own ? 1 : 0);
        }
        boolean[] keep = new boolean[n];
        keep[0] = true;
        for (int i = 1; i < n; i++) {
            keep[i] = outside[all.end[i]] - outside[i] > 0;
        }
        rest = all.subset(keep);
    }

    long bytes() {
        return 8L * tokens.length + rest.bytes();
    }

    /**
     * The class automaton: the state after byte {@code b}, or -1. It is {@link JsonLexemes#STRING_CHAR} restricted to
     * characters of the Basic Multilingual Plane written as they are (its escape and 4-byte states left out).
     */
    static int step(int g, int b) {
        int t = JsonLexemes.STRING_CHAR.step(STRING_STATE[g], b);
        return t < 0 ? -1 : CLASS_STATE[t];
    }

    /** Whether no byte of {@code follow} is a byte of the slice (then every exit of a lexeme lies in {@link #rest}). */
    static boolean apart(long[] follow) {
        return (follow[0] & LIVE[0]) == 0 && (follow[1] & LIVE[1]) == 0 && (follow[2] & LIVE[2]) == 0
                && (follow[3] & LIVE[3]) == 0;
    }

    /**
     * Per state of {@code x}, whether it is safe for the slice: no string of slice bytes read from it (a character
     * boundary) leads {@code x} to its dead state. One backward search over the product of the class automaton and
     * {@code x} from its pairs where a slice byte dies, over {@code x}'s byte classes; null when the product would
     * take more than {@code maxWork} steps (the lexeme then walks the whole trie). The work is charged to
     * {@code budget}.
     */
    static boolean[] safeStates(Lexeme x, long maxWork, MaskBudget budget) {
        int n = x.states();
        // representative bytes: one per (class automaton column, lexeme byte class) among the slice's bytes
        int[] reps = new int[256];
        int nr = 0;
        java.util.Set<Long> seen = new java.util.HashSet<>();
        for (int b = 0; b < 256; b++) {
            if ((LIVE[b >>> 6] & (1L << b)) == 0) {
                continue;
            }
            long key = x.byteClass(b);
            for (int g = 0; g < STATES; g++) {
                key = key * 8 + (step(g, b) + 1);
            }
            if (seen.add(key)) {
                reps[nr++] = b;
            }
        }
        long pairs = (long) STATES * n;
        if (pairs * nr > maxWork) {
            return null;
        }
        int p = (int) pairs;
        // forward edges of the product, pair = g * n + q
        int[] edgeFrom = new int[p * nr];
        int[] edgeTo = new int[p * nr];
        int edges = 0;
        boolean[] bad = new boolean[p];
        int[] queue = new int[p];
        int tail = 0;
        for (int g = 0; g < STATES; g++) {
            for (int q = 0; q < n; q++) {
                int from = g * n + q;
                budget.add(nr);
                for (int r = 0; r < nr; r++) {
                    int g2 = step(g, reps[r]);
                    if (g2 < 0) {
                        continue;
                    }
                    int q2 = x.step(q, reps[r]);
                    if (q2 < 0) {
                        if (!bad[from]) {
                            bad[from] = true;
                            queue[tail++] = from;
                        }
                    } else {
                        edgeFrom[edges] = from;
                        edgeTo[edges++] = g2 * n + q2;
                    }
                }
            }
        }
        // reverse adjacency (CSR by target), then badness spreads to predecessors
        int[] start = new int[p + 1];
        for (int e = 0; e < edges; e++) {
            start[edgeTo[e] + 1]++;
        }
        for (int i = 0; i < p; i++) {
            start[i + 1] += start[i];
        }
        int[] pred = new int[edges];
        int[] fill = Arrays.copyOf(start, p);
        for (int e = 0; e < edges; e++) {
            pred[fill[edgeTo[e]]++] = edgeFrom[e];
        }
        for (int head = 0; head < tail; head++) {
            int t = queue[head];
            for (int i = start[t]; i < start[t + 1]; i++) {
                int s = pred[i];
                if (!bad[s]) {
                    bad[s] = true;
                    queue[tail++] = s;
                }
            }
        }
        boolean[] safe = new boolean[n];
        for (int q = 0; q < n; q++) {
            safe[q] = !bad[q];
        }
        return safe;
    }
}
