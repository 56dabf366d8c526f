package io.tqserve.constraint;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * The byte strings of a model's tokens arranged as a trie, so that the tokens allowed in an automaton state are
 * found by walking the trie and the automaton together (a prefix the automaton rejects prunes every token below
 * it) instead of running every token separately. One per model, immutable, shared by all constraints.
 */
public final class Vocabulary {
    private final int size;
    private final byte[][] tokens;
    private final boolean[] singleByte = new boolean[256];
    // trie: node 0 is the root; children of a node are a linked list (firstChild, nextSibling), label = the byte
    final int[] firstChild;
    final int[] nextSibling;
    final char[] label;
    // tokens ending at a node: firstToken[node] -> token id, then nextToken[token] -> token id (-1 ends)
    final int[] firstToken;
    final int[] nextToken;

    /**
     * @param tokenBytes per token id, its bytes in the output; null (or empty) for tokens that never belong to
     *                   constrained text (special tokens)
     */
    public Vocabulary(byte[][] tokenBytes) {
        this.size = tokenBytes.length;
        this.tokens = tokenBytes;
        Map<Long, Integer> child = new HashMap<>();
        int nodes = 1;
        int[] parentOf = new int[1024];
        char[] labels = new char[1024];
        nextToken = new int[size];
        Arrays.fill(nextToken, -1);
        int[] first = new int[1024];
        Arrays.fill(first, -1);
        for (int id = 0; id < size; id++) {
            byte[] b = tokenBytes[id];
            if (b == null || b.length == 0) {
                continue;
            }
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
                        int old = first.length;
                        first = Arrays.copyOf(first, nodes * 2);
                        Arrays.fill(first, old, first.length, -1);
                    }
                    next = nodes++;
                    labels[next] = (char) (x & 0xFF);
                    parentOf[next] = node;
                    child.put(key, next);
                }
                node = next;
            }
            nextToken[id] = first[node];
            first[node] = id;
        }
        firstChild = new int[nodes];
        nextSibling = new int[nodes];
        Arrays.fill(firstChild, -1);
        Arrays.fill(nextSibling, -1);
        for (int n = nodes - 1; n >= 1; n--) {
            int p = parentOf[n];
            nextSibling[n] = firstChild[p];
            firstChild[p] = n;
        }
        label = Arrays.copyOf(labels, nodes);
        firstToken = Arrays.copyOf(first, nodes);
    }

    /** Token ids 0..size-1. */
    public int size() {
        return size;
    }

    /** The bytes of a token, or null. */
    public byte[] bytes(int token) {
        return tokens[token];
    }

    /** Whether the byte is a token of its own (the closing path of a constraint uses only those). */
    public boolean hasSingleByte(int b) {
        return singleByte[b];
    }

    int nodes() {
        return firstChild.length;
    }
}
