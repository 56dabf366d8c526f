package io.tqserve.backend.mlx;

import io.tqserve.backend.AbstractSequenceKv;
import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxScope;
import java.lang.foreign.MemorySegment;

/**
 * The bf16 KV cache of one sequence on the device: its tokens' K and V live in the backend's {@link MlxKvPool} for
 * its shape, in pages of {@link MlxKvPool#PAGE} token slots that the cache takes as it grows (so its allocation
 * grows in 256-token steps, as mlx-lm's KVCache does) and returns when closed. A forward step writes the new rows
 * with a scatter to their slots and reads the sequence's keys and values with a gather of its slots; a decode step
 * of several sequences does both for all of them at once ({@link MlxDecodeBatch}).
 */
final class MlxKvCache extends AbstractSequenceKv implements MlxSequenceKv {
    /** Tokens added per growth: one page. */
    static final int STEP = MlxKvPool.PAGE;

    private final MlxBackend backend;
    private final MlxKvPool pool;
    private final int layers;
    private final int numHeads;
    private final int numKvHeads;
    private final int headDim;
    private final float scale;
    private int[] pages = new int[0];

    MlxKvCache(MlxBackend backend, int layers, int numHeads, int numKvHeads, int headDim, int maxTokens) {
        super(maxTokens, (long) numKvHeads * 2 * headDim * 2);
        this.backend = backend;
        this.pool = backend.kvPool(layers, numKvHeads, headDim);
        this.layers = layers;
        this.numHeads = numHeads;
        this.numKvHeads = numKvHeads;
        this.headDim = headDim;
        this.scale = (float) (1.0 / Math.sqrt(headDim));
    }

    @Override
    public MlxBackend backend() {
        return backend;
    }

    MlxKvPool pool() {
        return pool;
    }

    /** The pool pages this cache holds, whole pages of every layer's K and V. */
    @Override
    public long bytesAllocated() {
        return (long) pages.length * STEP * layers * 2 * numKvHeads * headDim * 2;
    }

    /**
     * Starts a forward pass of {@code rows} new tokens (all layers of the pass share it): checks the room, takes
     * the pages they need (in {@code s}'s graph when the pool grows) and returns the cache's length before them.
     */
    int beginRows(MlxScope s, int rows) {
        beginPass(rows);
        int length = length();
        ensurePages(s, length + rows);
        return length;
    }

    /** Takes pool pages until the cache holds {@code tokens}. */
    private void ensurePages(MlxScope s, int tokens) {
        int need = (tokens + STEP - 1) / STEP;
        if (need > pages.length) {
            int[] grown = java.util.Arrays.copyOf(pages, need);
            for (int i = pages.length; i < need; i++) {
                grown[i] = pool.takePage(s);
            }
            pages = grown;
        }
    }

    /** The pool slot of token {@code pos}. */
    int slot(int pos) {
        return pages[pos / STEP] * STEP + pos % STEP;
    }

    /** Writes the slots of tokens [from, from+count) into {@code into} at {@code at}. */
    void slots(int from, int count, int[] into, int at) {
        for (int i = 0; i < count; i++) {
            into[at + i] = slot(from + i);
        }
    }

    private MlxArray slotArray(MlxScope s, int from, int count) {
        int[] sl = new int[count];
        slots(from, count, sl, 0);
        return s.fromInts(sl, 0, count, count);
    }

    /**
     * Stores k, v (1, numKvHeads, rows, headDim) of {@code layer} at positions length() .. length()+rows-1 and
     * returns the attention of q (1, numHeads, rows, headDim) over the cache, as (1, numHeads, rows, headDim) in
     * {@code dtype}. A fresh prefill attends over its own k, v (full precision); later steps over the stored
     * bf16 values. The caller evaluates {@link #arrays(int)} together with its outputs.
     */
    @Override
    public MlxArray attention(MlxScope s, int layer, MlxArray q, MlxArray k, MlxArray v, int rows, MlxDtype dtype) {
        int length = beginRows(s, rows);
        pool.write(s, layer, slotArray(s, length, rows), tokens(s, k, rows), tokens(s, v, rows));
        boolean causal = rows > 1;
        if (length == 0) {
            return s.attention(s.astype(q, dtype), s.astype(k, dtype), s.astype(v, dtype), scale, causal);
        }
        MlxArray[] kv = pool.read(s, layer, slotArray(s, 0, length + rows), 1, length + rows);
        return s.attention(s.astype(q, dtype), s.astype(kv[0], dtype), s.astype(kv[1], dtype), scale, causal);
    }

    /** (1, numKvHeads, rows, headDim) → (rows, numKvHeads, headDim). */
    private MlxArray tokens(MlxScope s, MlxArray x, int rows) {
        return s.reshape(s.transpose(x, 0, 2, 1, 3), rows, numKvHeads, headDim);
    }

    /** The K and V arrays of a layer (the pool's), to evaluate with the step's outputs. */
    @Override
    public MlxArray[] arrays(int layer) {
        return pool.arrays(layer);
    }

    @Override
    public void attend(int layer, int rowOffset, int rows, float[] q, float[] k, float[] v, float[] out) {
        MlxSequenceKvs.attend(this, numHeads, numKvHeads, headDim, layer, rowOffset, rows, q, k, v, out,
                pool::allArrays);
    }

    @Override
    public void exportLayer(int layer, int from, int count, MemorySegment dst) {
        MemorySegment exact = checkExport(from, count, dst);
        if (count == 0) {
            return;
        }
        backend.device().run(s -> {
            MlxArray[] kv = pool.read(s, layer, slotArray(s, from, count), 1, count); // (1, numKvHeads, count, hd)
            MlxArray k = s.transpose(kv[0], 0, 2, 1, 3); // (1, count, numKvHeads, headDim)
            MlxArray v = s.transpose(kv[1], 0, 2, 1, 3);
            s.copyBits16(s.concatenate(3, k, v), exact); // (1, count, numKvHeads, 2·headDim), little-endian
        });
    }

    @Override
    public void importLayer(int layer, int count, MemorySegment src) {
        MemorySegment exact = beginImport(count, src);
        int length = length();
        if (count == 0) {
            return;
        }
        backend.device().run(s -> {
            ensurePages(s, length + count);
            MlxArray kv = s.fromSegment(exact, MlxDtype.BFLOAT16, count, numKvHeads, 2 * headDim);
            MlxArray k = s.slice(kv, new int[3], new int[] {count, numKvHeads, headDim});
            MlxArray v = s.slice(kv, new int[] {0, 0, headDim}, new int[] {count, numKvHeads, 2 * headDim});
            pool.write(s, layer, slotArray(s, length, count), k, v);
            s.eval(pool.allArrays()); // every layer: a growth above left each one pending
        });
    }

    @Override
    protected void free() {
        backend.device().heldRun(() -> {
            pool.release(pages);
            pages = new int[0];
        });
    }
}
