package io.tqserve.constraint;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * The byte strings of a model's tokens arranged as a trie, so that the tokens a parser state allows are found by
 * walking the trie and the parser together (a prefix the parser rejects prunes every token below it) instead of
 * running every token separately. Nodes are numbered breadth first with each node's children contiguous and
 * sorted by byte, so a child is found by a binary search and the children are a range. One per model, immutable,
 * shared by all constraints.
 */
public final class Vocabulary {
    private final int size;
    private final byte[][] tokens;
    private final boolean[] singleByte = new boolean[256];
    /** Children of node n are nodes childStart[n] .. childStart[n+1]-1 (the array has nodes+1 entries). */
    final int[] childStart;
    /** The byte that leads to a node (0..255; the root's is 0). */
    final int[] label;
    /** tokens ending at a node: firstToken[node] -> token id, then nextToken[token] -> token id (-1 ends). */
    final int[] firstToken;
    final int[] nextToken;
    /** Longest token in bytes. */
    final int maxTokenBytes;
    /** The same trie in depth-first preorder, for walks that visit most of it (a wide lexeme's mask). */
    final Preorder preorder;
    /** The general slice: the tokens made of plain string characters and the part of the trie holding the rest. */
    final StringSlice slice;
    /**
     * Masks of the JSON string and whitespace lexemes, which do not depend on a schema: shared by every constraint
     * over this vocabulary, bounded by {@link #SHARED_MASK_BYTES}.
     */
    final LexemeMasks sharedMasks = new LexemeMasks(this, SHARED_MASK_BYTES);
    /** Bound of the shared lexeme-mask cache. */
    public static final long SHARED_MASK_BYTES = 32L << 20;

    /**
     * @param tokenBytes per token id, its bytes in the output; null (or empty) for tokens that never belong to
     *                   constrained text (special tokens)
     */
    public Vocabulary(byte[][] tokenBytes) {
        this.size = tokenBytes.length;
        this.tokens = tokenBytes;
        // build with a hash map of (node, byte) -> child, then renumber breadth first
        Map<Long, Integer> child = new HashMap<>();
        int nodes = 1;
        int[] parentOf = new int[1024];
        int[] labels = new int[1024];
        int[] tokenNode = new int[size];
        int longest = 0;
        for (int id = 0; id < size; id++) {
            byte[] b = tokenBytes[id];
            tokenNode[id] = -1;
            if (b == null || b.length == 0) {
                continue;
            }
            longest = Math.max(longest, b.length);
            if (b.length == 1) {
                singleByte[b[0] & 0xFF] = true;
            }
            int node = 0;
            for (byte x : b) {
                long key = ((long) node << 8) | (x & 0xFF);
                Integer next = child.get(key);
                if (next == null) {
                    if (nodes == labels.length) {
                        labels = Arrays.copyOf(labels, nodes * 2);
                        parentOf = Arrays.copyOf(parentOf, nodes * 2);
                    }
                    next = nodes++;
                    labels[next] = x & 0xFF;
                    parentOf[next] = node;
                    child.put(key, next);
                }
                node = next;
            }
            tokenNode[id] = node;
        }
        this.maxTokenBytes = longest;
        // children lists (old numbering), sorted by label
        int[] count = new int[nodes + 1];
        for (int n = 1; n < nodes; n++) {
            count[parentOf[n]]++;
        }
        int[] start = new int[nodes + 1];
        for (int n = 0; n < nodes; n++) {
            start[n + 1] = start[n] + count[n];
        }
        int[] kids = new int[Math.max(0, nodes - 1)];
        int[] fill = Arrays.copyOf(start, nodes);
        for (int n = 1; n < nodes; n++) {
            kids[fill[parentOf[n]]++] = n;
        }
        final int[] lab = labels;
        for (int n = 0; n < nodes; n++) {
            Integer[] part = new Integer[start[n + 1] - start[n]];
            for (int i = 0; i < part.length; i++) {
                part[i] = kids[start[n] + i];
            }
            Arrays.sort(part, (x, y) -> Integer.compare(lab[x], lab[y]));
            for (int i = 0; i < part.length; i++) {
                kids[start[n] + i] = part[i];
            }
        }
        // breadth-first renumbering: a node's children get consecutive new numbers
        int[] newId = new int[nodes];
        int[] order = new int[nodes];
        order[0] = 0;
        int head = 0;
        int tail = 1;
        childStart = new int[nodes + 1];
        while (head < tail) {
            int old = order[head];
            childStart[head] = tail;
            for (int i = start[old]; i < start[old + 1]; i++) {
                newId[kids[i]] = tail;
                order[tail++] = kids[i];
            }
            head++;
        }
        childStart[nodes] = tail;
        label = new int[nodes];
        for (int n = 0; n < nodes; n++) {
            label[n] = labels[order[n]];
        }
        label[0] = 0;
        firstToken = new int[nodes];
        Arrays.fill(firstToken, -1);
        nextToken = new int[size];
        Arrays.fill(nextToken, -1);
        for (int id = size - 1; id >= 0; id--) {
            if (tokenNode[id] >= 0) {
                int n = newId[tokenNode[id]];
                nextToken[id] = firstToken[n];
                firstToken[n] = id;
            }
        }
        if (longest > Short.MAX_VALUE) {
            throw new IllegalArgumentException("a token of " + longest + " bytes");
        }
        // preorder: subtree sizes bottom up (children have larger breadth-first ids), then an explicit stack
        int[] subtree = new int[nodes];
        for (int n = nodes - 1; n >= 0; n--) {
            subtree[n] += 1;
            if (n > 0) {
                subtree[parentOfNew(n)] += subtree[n];
            }
        }
        byte[] dfsLabel = new byte[nodes];
        short[] dfsDepth = new short[nodes];
        int[] dfsEnd = new int[nodes];
        int[] dfsNode = new int[nodes];
        int[] dfsTokenStart = new int[nodes + 1];
        int[] tokensOut = new int[size];
        int[] stack = new int[nodes];
        int[] depthOf = new int[nodes];
        int sp = 0;
        stack[sp++] = 0;
        int pre = 0;
        int nt = 0;
        while (sp > 0) {
            int n = stack[--sp];
            dfsLabel[pre] = (byte) label[n];
            dfsDepth[pre] = (short) depthOf[n];
            dfsEnd[pre] = pre + subtree[n];
            dfsNode[pre] = n;
            dfsTokenStart[pre] = nt;
            for (int t = firstToken[n]; t >= 0; t = nextToken[t]) {
                tokensOut[nt++] = t;
            }
            pre++;
            for (int ch = childStart[n + 1] - 1; ch >= childStart[n]; ch--) { // smallest byte first
                depthOf[ch] = depthOf[n] + 1;
                stack[sp++] = ch;
            }
        }
        dfsTokenStart[nodes] = nt;
        preorder = new Preorder(dfsLabel, dfsDepth, dfsEnd, dfsNode, dfsTokenStart, Arrays.copyOf(tokensOut, nt));
        slice = new StringSlice(this);
    }

    /**
     * A trie (or an ancestor-closed part of one) in depth-first preorder: node i's subtree is i .. end[i]-1, so a walk
     * reads the arrays front to back and skips a dead subtree in one step; node i at depth d continues the path of
     * the last node seen at depth d-1.
     */
    static final class Preorder {
        /** Per node: the byte that leads to it, its depth (the root is node 0 at depth 0), its breadth-first id. */
        final byte[] label;
        final short[] depth;
        final int[] end;
        final int[] node;
        /** Tokens ending at node i: tokens[tokenStart[i] .. tokenStart[i+1]-1]. */
        final int[] tokenStart;
        final int[] tokens;

        Preorder(byte[] label, short[] depth, int[] end, int[] node, int[] tokenStart, int[] tokens) {
            this.label = label;
            this.depth = depth;
            this.end = end;
            this.node = node;
            this.tokenStart = tokenStart;
            this.tokens = tokens;
        }

        /** The nodes with {@code keep} set, which must hold every kept node's parent, in the same order. */
        Preorder subset(boolean[] keep) {
            int n = label.length;
            int[] rank = new int[n + 1]; // kept nodes before i
            for (int i = 0; i < n; i++) {
                rank[i + 1] = rank[i] + (keep[i] ? 1 : 0);
            }
            int m = rank[n];
            byte[] l = new byte[m];
            short[] d = new short[m];
            int[] e = new int[m];
            int[] id = new int[m];
            int[] ts = new int[m + 1];
            int[] tk = new int[tokens.length];
            int nt = 0;
            for (int i = 0; i < n; i++) {
                if (keep[i]) {
                    int j = rank[i];
                    l[j] = label[i];
                    d[j] = depth[i];
                    e[j] = rank[end[i]];
                    id[j] = node[i];
                    ts[j] = nt;
                    for (int k = tokenStart[i]; k < tokenStart[i + 1]; k++) {
                        tk[nt++] = tokens[k];
                    }
                }
            }
            ts[m] = nt;
            return new Preorder(l, d, e, id, ts, Arrays.copyOf(tk, nt));
        }

        long bytes() {
            return 15L * label.length + 4L * tokens.length;
        }
    }

    /** The parent of a breadth-first node (during construction: children ranges are set). */
    private int parentOfNew(int n) {
        int lo = 0;
        int hi = n - 1;
        while (lo < hi) { // the last node whose children start at or before n
            int mid = (lo + hi + 1) >>> 1;
            if (childStart[mid] <= n) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        while (childStart[lo] > n || childStart[lo + 1] <= n) {
            lo--;
        }
        return lo;
    }

    /** Token ids 0..size-1. */
    public int size() {
        return size;
    }

    /** The bytes of a token, or null. */
    public byte[] bytes(int token) {
        return tokens[token];
    }

    /** Whether the byte is a token of its own. */
    public boolean hasSingleByte(int b) {
        return singleByte[b];
    }

    int nodes() {
        return label.length;
    }

    /** The child of {@code node} reached by byte {@code b}, or -1. */
    int child(int node, int b) {
        int lo = childStart[node];
        int hi = childStart[node + 1] - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            int l = label[mid];
            if (l < b) {
                lo = mid + 1;
            } else if (l > b) {
                hi = mid - 1;
            } else {
                return mid;
            }
        }
        return -1;
    }

    /** Bytes of the arrays behind the trie (for memory accounting). */
    long bytes() {
        return 4L * (childStart.length + label.length + firstToken.length + nextToken.length) + preorder.bytes()
                + slice.bytes();
    }
}
