package io.tqserve.backend.mlx;

import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxScope;
import io.tqserve.backend.mlx.ffm.MlxStore;
import java.util.ArrayDeque;

/**
 * The bf16 K and V of every {@link MlxKvCache} of one attention shape, on the device: per layer one K and one V
 * array of (slots, numKvHeads, headDim), one slot per token, handed to the caches in pages of {@link #PAGE} slots.
 * Because all sequences' K/V live in the same two arrays per layer, a decode step writes the new rows of every
 * sequence with one scatter and reads every sequence's keys with one gather (a (B·S) slot table), so the step's
 * graph has the same ops for 1 or 8 sequences (vLLM's paged KV, with MLX ops instead of a paged-attention kernel).
 *
 * <p>The pool grows in the graph of the step that needs a page (a concatenation, amortised by growing by a
 * quarter of its size, at least 4 pages), and its arrays are dropped when the last page is returned, so an idle
 * backend holds no KV memory.
 * All methods run with the device held ({@link MlxDevice}).
 */
final class MlxKvPool {
    /** Token slots per page: what a cache takes at a time (as the 256-token growth of mlx-lm's KVCache). */
    static final int PAGE = 256;

    private final MlxBackend backend;
    private final int layers;
    private final int numKvHeads;
    private final int headDim;
    private final ArrayDeque<Integer> free = new ArrayDeque<>();
    private MlxStore store;
    private MlxArray[] keys;   // per layer (pages·PAGE, numKvHeads, headDim) bf16
    private MlxArray[] values;
    private int pages;
    private int used;

    MlxKvPool(MlxBackend backend, int layers, int numKvHeads, int headDim) {
        this.backend = backend;
        this.layers = layers;
        this.numKvHeads = numKvHeads;
        this.headDim = headDim;
    }

    int numKvHeads() {
        return numKvHeads;
    }

    int headDim() {
        return headDim;
    }

    /** A free page for a cache, growing the pool in {@code s}'s graph (not evaluated here) when none is free. */
    int takePage(MlxScope s) {
        if (free.isEmpty()) {
            grow(s, Math.max(4, pages / 4));
        }
        used++;
        return free.pop();
    }

    /** Returns a cache's pages; the pool's arrays are dropped when no page is in use. */
    void release(int[] returned) {
        for (int p : returned) {
            free.push(p);
        }
        used -= returned.length;
        if (used == 0 && store != null) {
            store.close();
            store = null;
            keys = null;
            values = null;
            free.clear();
            pages = 0;
        }
    }

    private void grow(MlxScope s, int add) {
        if (store == null) {
            store = backend.mlx().newStore();
            keys = new MlxArray[layers];
            values = new MlxArray[layers];
        }
        int slots = add * PAGE;
        for (int l = 0; l < layers; l++) {
            MlxArray tailK = s.zeros(MlxDtype.BFLOAT16, slots, numKvHeads, headDim);
            MlxArray tailV = s.zeros(MlxDtype.BFLOAT16, slots, numKvHeads, headDim);
            if (pages == 0) {
                keys[l] = store.keep(tailK);
                values[l] = store.keep(tailV);
            } else {
                keys[l].set(s.concatenate(0, keys[l], tailK));
                values[l].set(s.concatenate(0, values[l], tailV));
            }
        }
        for (int p = pages + add - 1; p >= pages; p--) {
            free.push(p); // lowest first
        }
        pages += add;
    }

    /**
     * Writes k, v, each (N, numKvHeads, headDim) in any float dtype, as bf16 to the slots {@code slots} (N) int32
     * of {@code layer}; one scatter per array (the old array is donated to it when nothing else holds it).
     */
    void write(MlxScope s, int layer, MlxArray slots, MlxArray k, MlxArray v) {
        int n = k.shape()[0];
        keys[layer].set(s.scatter(keys[layer], slots, s.reshape(s.astype(k, MlxDtype.BFLOAT16), n, 1, numKvHeads,
                headDim), 0));
        values[layer].set(s.scatter(values[layer], slots, s.reshape(s.astype(v, MlxDtype.BFLOAT16), n, 1,
                numKvHeads, headDim), 0));
    }

    /**
     * The K and V of {@code slots} (B·S) int32 of {@code layer} as (B, numKvHeads, S, headDim) bf16 arrays: one
     * gather per array, whatever B.
     */
    MlxArray[] read(MlxScope s, int layer, MlxArray slots, int b, int len) {
        return new MlxArray[] {heads(s, s.take(keys[layer], slots, 0), b, len),
            heads(s, s.take(values[layer], slots, 0), b, len)};
    }

    private MlxArray heads(MlxScope s, MlxArray rows, int b, int len) {
        return s.transpose(s.reshape(rows, b, len, numKvHeads, headDim), 0, 2, 1, 3);
    }

    /** The K and V arrays of a layer, to evaluate with a step's outputs. */
    MlxArray[] arrays(int layer) {
        return new MlxArray[] {keys[layer], values[layer]};
    }

    /** Every layer's arrays. */
    MlxArray[] allArrays() {
        MlxArray[] all = new MlxArray[2 * layers];
        for (int l = 0; l < layers; l++) {
            all[2 * l] = keys[l];
            all[2 * l + 1] = values[l];
        }
        return all;
    }

    /** Drops the arrays (the backend closes). */
    void close() {
        if (store != null) {
            store.close();
            store = null;
        }
    }

    /** Bytes the pool's arrays hold on the device (all pages, in use or free). */
    long bytes() {
        return (long) pages * PAGE * layers * 2 * numKvHeads * headDim * 2;
    }
}
