package io.tqserve.constraint;

import java.util.Arrays;

/**
 * Minimisation of a deterministic automaton over bytes given as a table ({@code -1}: no transition), by Hopcroft's
 * partition refinement over the table's byte classes, on int arrays. dk.brics' own minimisation (linked lists and
 * hash sets of states over character intervals) took most of a pattern's compile time on the automata of
 * {@link JsonStringContent}; this one is {@code O(k n log n)} for {@code n} states and {@code k} byte classes. The
 * result is the minimal automaton of the same language: states from which no accepting state can be reached are
 * merged with the missing transitions (a complete automaton's sink) and dropped.
 */
final class ByteDfa {
    /** A minimal automaton: start state 0, {@code delta[s][b]} the state after byte b ({@code -1}: none). */
    record Minimal(int[][] delta, boolean[] accept) {
        int states() {
            return accept.length;
        }
    }

    private ByteDfa() {
    }

    /**
     * The minimal automaton of the one with transitions {@code table[s * k + c]} ({@code -1}: none) on the bytes
     * of class {@code c} ({@code classOf[b]}, {@code k} classes), accepting states {@code accept}, from {@code start}.
     * With {@code classOf} null, the rows of the result are per class ({@code k} long), not per byte: the classes
     * then stand for character intervals ({@link CharDfa}).
     */
    static Minimal minimize(int[] table, int k, int[] classOf, boolean[] accept, int start) {
        int n = accept.length;
        int total = n + 1; // state n: the sink, where the missing transitions go
        int[] trans = new int[total * k];
        for (int s = 0; s < total; s++) {
            for (int c = 0; c < k; c++) {
                int t = s < n ? table[s * k + c] : -1;
                trans[s * k + c] = t < 0 ? n : t;
            }
        }
        // predecessors per (class, target): CSR over index c * total + t
        int[] invStart = new int[k * total + 1];
        for (int s = 0; s < total; s++) {
            for (int c = 0; c < k; c++) {
                invStart[c * total + trans[s * k + c] + 1]++;
            }
        }
        for (int i = 0; i < k * total; i++) {
            invStart[i + 1] += invStart[i];
        }
        int[] inv = new int[total * k];
        int[] fill = Arrays.copyOf(invStart, k * total);
        for (int s = 0; s < total; s++) {
            for (int c = 0; c < k; c++) {
                inv[fill[c * total + trans[s * k + c]]++] = s;
            }
        }
        // blocks: contiguous ranges of elems; accepting states first
        int[] elems = new int[total];
        int[] pos = new int[total];
        int[] blockOf = new int[total];
        int[] first = new int[total];
        int[] end = new int[total];
        int accepting = 0;
        for (int s = 0; s < n; s++) {
            if (accept[s]) {
                elems[accepting++] = s;
            }
        }
        int j = accepting;
        for (int s = 0; s < total; s++) {
            if (s == n || !accept[s]) {
                elems[j++] = s;
            }
        }
        int blocks = 0;
        if (accepting > 0) {
            first[0] = 0;
            end[0] = accepting;
            blocks = 1;
        }
        first[blocks] = accepting;
        end[blocks] = total;
        blocks++;
        for (int i = 0; i < total; i++) {
            pos[elems[i]] = i;
            blockOf[elems[i]] = i < accepting ? 0 : blocks - 1;
        }
        int[] stack = new int[total];
        boolean[] inWork = new boolean[total];
        int top = 0;
        if (blocks == 2) {
            int smaller = end[0] - first[0] <= end[1] - first[1] ? 0 : 1;
            stack[top++] = smaller;
            inWork[smaller] = true;
        }
        int[] marked = new int[total];
        int[] touched = new int[total];
        int[] splitter = new int[total];
        while (top > 0) {
            int a = stack[--top];
            inWork[a] = false;
            int size = end[a] - first[a];
            System.arraycopy(elems, first[a], splitter, 0, size);
            for (int c = 0; c < k; c++) {
                int nt = 0;
                for (int e = 0; e < size; e++) {
                    int t = splitter[e];
                    for (int i = invStart[c * total + t]; i < invStart[c * total + t + 1]; i++) {
                        int p = inv[i];
                        int b = blockOf[p];
                        int at = first[b] + marked[b];
                        if (pos[p] < at) {
                            continue; // already marked
                        }
                        if (marked[b] == 0) {
                            touched[nt++] = b;
                        }
                        int q = elems[at]; // swap p into the marked prefix of its block
                        elems[at] = p;
                        elems[pos[p]] = q;
                        pos[q] = pos[p];
                        pos[p] = at;
                        marked[b]++;
                    }
                }
                for (int x = 0; x < nt; x++) {
                    int b = touched[x];
                    int m = marked[b];
                    marked[b] = 0;
                    if (m == end[b] - first[b]) {
                        continue;
                    }
                    int nb = blocks++; // the marked prefix becomes a new block
                    first[nb] = first[b];
                    end[nb] = first[b] + m;
                    first[b] = end[nb];
                    for (int i = first[nb]; i < end[nb]; i++) {
                        blockOf[elems[i]] = nb;
                    }
                    int push = inWork[b] || m <= end[b] - first[b] ? nb : b;
                    if (!inWork[push]) {
                        inWork[push] = true;
                        stack[top++] = push;
                    }
                }
            }
        }
        // renumber: the start's block 0, the sink's block dropped (-1), the others in order of first appearance
        int sink = blockOf[n];
        int[] id = new int[blocks];
        Arrays.fill(id, -2);
        id[sink] = -1;
        int count = 0;
        if (blockOf[start] == sink) {
            return new Minimal(new int[][] {filled(classOf == null ? k : 256)}, new boolean[1]);
        }
        id[blockOf[start]] = count++;
        for (int s = 0; s < n; s++) {
            if (id[blockOf[s]] == -2) {
                id[blockOf[s]] = count++;
            }
        }
        int[][] out = new int[count][];
        boolean[] acc = new boolean[count];
        for (int s = 0; s < n; s++) {
            int to = id[blockOf[s]];
            if (to >= 0 && out[to] == null) {
                int[] row = new int[classOf == null ? k : 256];
                for (int b = 0; b < row.length; b++) {
                    row[b] = id[blockOf[trans[s * k + (classOf == null ? b : classOf[b])]]];
                }
                out[to] = row;
                acc[to] = accept[s];
            }
        }
        return new Minimal(out, acc);
    }

    private static int[] filled(int n) {
        int[] row = new int[n];
        Arrays.fill(row, -1);
        return row;
    }
}
