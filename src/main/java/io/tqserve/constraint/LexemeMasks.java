package io.tqserve.constraint;

import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A cache, bounded in bytes, of what the vocabulary does against a wide lexeme in one state: the tokens that stay
 * inside the lexeme (grouped by the units they add, for counted lexemes) and the trie nodes where the lexeme may end
 * with a byte of what follows (the follow set, part of the key) below. When the bound is reached the cache is
 * emptied and refilled by use (entries are rebuilt in milliseconds; the bound is what matters).
 */
final class LexemeMasks {
    /** Tokens adding fewer units than this are kept in one bitset per unit count. */
    static final int CAP = 16;

    private final Vocabulary v;
    private final long maxBytes;
    private final ConcurrentHashMap<Key, Entry> map = new ConcurrentHashMap<>();
    private final AtomicLong bytes = new AtomicLong();
    private final java.util.concurrent.atomic.AtomicInteger builds = new java.util.concurrent.atomic.AtomicInteger();
    private final java.util.concurrent.atomic.AtomicInteger clears = new java.util.concurrent.atomic.AtomicInteger();

    record Key(Lexeme lexeme, int state, long f0, long f1, long f2, long f3) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Key k && k.lexeme == lexeme && k.state == state && k.f0 == f0 && k.f1 == f1
                    && k.f2 == f2 && k.f3 == f3;
        }

        @Override
        public int hashCode() {
            return System.identityHashCode(lexeme) * 31 + state + Long.hashCode(f0 * 31 + f1 * 17 + f2 * 7 + f3);
        }
    }

    /**
     * @param all        tokens inside the lexeme, any number of units
     * @param byUnits    for counted lexemes: byUnits[u] = tokens adding exactly u units (null when none), u &lt; CAP
     * @param longTokens tokens adding CAP units or more, by ascending units ({@code longUnits})
     * @param maxUnits   the most units a token adds
     * @param exitNodes  trie nodes where the lexeme may end and a follow byte is a child
     * @param exitUnits  units added on the way to each exit node
     */
    record Entry(long[] all, long[][] byUnits, int[] longTokens, int[] longUnits, int maxUnits, int[] exitNodes,
            int[] exitUnits, long bytes) {
        /** ORs into {@code mask} the inside tokens adding at most {@code room} units. */
        void orInside(long[] mask, int room) {
            if (room >= maxUnits) {
                for (int i = 0; i < all.length; i++) {
                    mask[i] |= all[i];
                }
                return;
            }
            for (int u = 0; u <= Math.min(room, CAP - 1); u++) {
                long[] b = byUnits[u];
                if (b != null) {
                    for (int i = 0; i < b.length; i++) {
                        mask[i] |= b[i];
                    }
                }
            }
            for (int i = 0; i < longTokens.length && longUnits[i] <= room; i++) {
                int t = longTokens[i];
                mask[t >>> 6] |= 1L << t;
            }
        }
    }

    LexemeMasks(Vocabulary v, long maxBytes) {
        this.v = v;
        this.maxBytes = maxBytes;
    }

    long bytes() {
        return bytes.get();
    }

    int size() {
        return map.size();
    }

    /** Entries built and times the cache was emptied (for tests and metrics). */
    String stats() {
        return map.size() + " entries, " + bytes.get() + " bytes, " + builds.get() + " builds, " + clears.get()
                + " clears";
    }

    /** The entry of a lexeme state, built (its trie walk charged to {@code budget}) when not cached. */
    Entry entry(Lexeme lexeme, int at, long[] follow, MaskBudget budget) {
        Lexeme x = lexeme.sharedLexeme(at); // lexemes with a common part share its entries
        int state = lexeme.sharedState(at);
        Key key = new Key(x, state, follow[0], follow[1], follow[2], follow[3]);
        Entry e = map.get(key);
        if (e != null) {
            return e;
        }
        e = x instanceof UndeclaredNames u && u.inTrie(state) ? declared(u, state, follow, budget)
                : build(x, state, follow, budget, true);
        builds.incrementAndGet();
        if (e.bytes <= maxBytes) {
            if (bytes.get() + e.bytes > maxBytes) {
                map.clear();
                bytes.set(0);
                clears.incrementAndGet();
            }
            if (map.putIfAbsent(key, e) == null) {
                bytes.addAndGet(e.bytes);
            }
        }
        return e;
    }

    /**
     * An undeclared member name still inside the declared names' trie: the entry of {@link UndeclaredNames#OUTSIDE}
     * in the same character state (from the vocabulary's shared cache), less the exits where a declared name is
     * complete. The same tokens stay inside (both read the canonical characters), so instead of a walk over the
     * whole vocabulary, which every schema with undeclared members would pay again at each name start, only the
     * declared names below the state are followed. The shared entry depends on the vocabulary and a state of the
     * schema-independent character automaton only: it reveals nothing of the schema or tenant that built it.
     */
    private Entry declared(UndeclaredNames u, int state, long[] follow, MaskBudget budget) {
        Entry o = v.sharedMasks.entry(UndeclaredNames.OUTSIDE, u.outsideState(state), follow, budget);
        int[] drop = u.declaredEnds(state, v);
        Arrays.sort(drop);
        int[] nodes = o.exitNodes();
        budget.add(nodes.length + 8L * drop.length);
        int[] keep = new int[nodes.length];
        int[] units = new int[nodes.length];
        int n = 0;
        for (int i = 0; i < nodes.length; i++) {
            if (Arrays.binarySearch(drop, nodes[i]) < 0) {
                keep[n] = nodes[i];
                units[n++] = o.exitUnits()[i];
            }
        }
        return new Entry(o.all(), o.byUnits(), o.longTokens(), o.longUnits(), o.maxUnits(), Arrays.copyOf(keep, n),
                Arrays.copyOf(units, n), 8L * o.all().length + 8L * n + 256);
    }

    /**
     * The entry of a lexeme state by a walk of the trie with the automaton alone; with {@code slices}, a state safe
     * for the vocabulary's general slice walks only the rest of the trie ({@link StringSlice}): the same entry.
     */
    Entry build(Lexeme x, int state, long[] follow, MaskBudget budget, boolean slices) {
        int words = (v.size() + 63) >>> 6;
        long[] all = new long[words];
        long[][] byUnits = new long[CAP][];
        int[] longTok = new int[16];
        int[] longUnits = new int[16];
        int nLong = 0;
        int maxUnits = 0;
        int[] exitNodes = new int[64];
        int[] exitUnits = new int[64];
        int nExit = 0;
        // one pass over the trie in preorder with the automaton alone: node i at depth d continues the path of the
        // last node seen at depth d-1; a dead node's subtree is skipped whole. A state safe for the vocabulary's
        // general slice starts from the slice's tokens and walks only the part of the trie that holds the others
        Vocabulary.Preorder trie = v.preorder;
        if (slices && !x.counted && StringSlice.apart(follow) && x.sliceSafe(state, v.nodes(), budget)) {
            trie = v.slice.rest;
            System.arraycopy(v.slice.tokens, 0, all, 0, words);
        }
        int start = x.start();
        int depths = v.maxTokenBytes + 1;
        int[] stateAt = new int[depths];
        int[] unitsAt = new int[depths];
        int[] nodeAt = new int[depths];
        stateAt[0] = state;
        int lastExit = -1;
        byte[] labels = trie.label;
        short[] depth = trie.depth;
        int[] tokenStart = trie.tokenStart;
        int[] tokens = trie.tokens;
        int[] ends = trie.end;
        int[] ids = trie.node;
        int nodes = labels.length;
        for (int i = 1; i < nodes;) {
            budget.add(1);
            int d = depth[i];
            int ps = stateAt[d - 1];
            int pu = unitsAt[d - 1];
            int b = labels[i] & 0xFF;
            if ((follow[b >>> 6] & (1L << b)) != 0 && nodeAt[d - 1] != lastExit
                    && (x.counted ? ps == start : x.accepting(ps))) {
                // the lexeme may end at the parent and a byte of what follows comes next
                lastExit = nodeAt[d - 1];
                if (nExit == exitNodes.length) {
                    exitNodes = Arrays.copyOf(exitNodes, nExit * 2);
                    exitUnits = Arrays.copyOf(exitUnits, nExit * 2);
                }
                exitNodes[nExit] = ids[lastExit];
                exitUnits[nExit++] = pu;
            }
            int t = x.step(ps, b);
            if (t < 0) {
                i = ends[i];
                continue;
            }
            int u = x.counted && ps == start ? pu + 1 : pu;
            stateAt[d] = t;
            unitsAt[d] = u;
            nodeAt[d] = i;
            for (int k = tokenStart[i]; k < tokenStart[i + 1]; k++) {
                int tok = tokens[k];
                all[tok >>> 6] |= 1L << tok;
                maxUnits = Math.max(maxUnits, u);
                if (x.counted) {
                    if (u < CAP) {
                        if (byUnits[u] == null) {
                            byUnits[u] = new long[words];
                        }
                        byUnits[u][tok >>> 6] |= 1L << tok;
                    } else {
                        if (nLong == longTok.length) {
                            longTok = Arrays.copyOf(longTok, nLong * 2);
                            longUnits = Arrays.copyOf(longUnits, nLong * 2);
                        }
                        longTok[nLong] = tok;
                        longUnits[nLong++] = u;
                    }
                }
            }
            i++;
        }
        if (!x.counted) {
            maxUnits = 0;
        }
        // long tokens by ascending units
        Integer[] idx = new Integer[nLong];
        for (int i = 0; i < nLong; i++) {
            idx[i] = i;
        }
        final int[] lu = longUnits;
        Arrays.sort(idx, (a, b) -> Integer.compare(lu[a], lu[b]));
        int[] lt = new int[nLong];
        int[] lun = new int[nLong];
        for (int i = 0; i < nLong; i++) {
            lt[i] = longTok[idx[i]];
            lun[i] = longUnits[idx[i]];
        }
        long size = 8L * words + 8L * nLong + 8L * nExit + 256;
        for (long[] b : byUnits) {
            size += b == null ? 8 : 8L * words + 16;
        }
        return new Entry(all, byUnits, lt, lun, maxUnits, Arrays.copyOf(exitNodes, nExit),
                Arrays.copyOf(exitUnits, nExit), size);
    }
}
