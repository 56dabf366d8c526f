package io.tqserve.backend.mlx;

import io.tqserve.backend.AbstractSequenceKv;
import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxScope;
import io.tqserve.backend.mlx.ffm.MlxStore;
import java.lang.foreign.MemorySegment;

/**
 * The bf16 KV cache of one sequence as MLX arrays: per layer one K and one V array of shape
 * (1, numKvHeads, capacity, headDim), grown by {@link #STEP} tokens at a time (as mlx-lm's KVCache does) and
 * written in place with {@code slice_update} (the old buffer is donated to the update, so a step copies only
 * the new rows).
 */
final class MlxKvCache extends AbstractSequenceKv implements MlxSequenceKv {
    /** Tokens added per growth. */
    static final int STEP = 256;

    private final MlxBackend backend;
    private final Mlx mlx;
    private final int layers;
    private final int numHeads;
    private final int numKvHeads;
    private final int headDim;
    private final float scale;
    private final MlxStore store;
    private final MlxArray[] keys;   // per layer (1, numKvHeads, capacity, headDim) bf16
    private final MlxArray[] values; // per layer (1, numKvHeads, capacity, headDim) bf16
    private int capacity;

    MlxKvCache(MlxBackend backend, int layers, int numHeads, int numKvHeads, int headDim, int maxTokens) {
        super(maxTokens, (long) numKvHeads * 2 * headDim * 2);
        this.backend = backend;
        this.mlx = backend.mlx();
        this.layers = layers;
        this.numHeads = numHeads;
        this.numKvHeads = numKvHeads;
        this.headDim = headDim;
        this.scale = (float) (1.0 / Math.sqrt(headDim));
        this.store = mlx.newStore();
        this.keys = new MlxArray[layers];
        this.values = new MlxArray[layers];
        for (int l = 0; l < layers; l++) {
            keys[l] = store.empty();
            values[l] = store.empty();
        }
    }

    @Override
    public MlxBackend backend() {
        return backend;
    }

    @Override
    public long bytesAllocated() {
        return (long) capacity * layers * 2 * numKvHeads * headDim * 2;
    }

    /**
     * Stores k, v (1, numKvHeads, rows, headDim) of {@code layer} at positions length() .. length()+rows-1 and
     * returns the attention of q (1, numHeads, rows, headDim) over the cache, as (1, numHeads, rows, headDim) in
     * {@code dtype}. A fresh prefill attends over its own k, v (full precision); later steps over the stored
     * bf16 values. The caller evaluates {@link #arrays(int)} together with its outputs.
     */
    @Override
    public MlxArray attention(MlxScope s, int layer, MlxArray q, MlxArray k, MlxArray v, int rows, MlxDtype dtype) {
        beginPass(rows);
        int length = length();
        ensureCapacity(s, length + rows);
        int[] start = {0, 0, length, 0};
        int[] stop = {1, numKvHeads, length + rows, headDim};
        keys[layer].set(s.sliceUpdate(keys[layer], s.astype(k, MlxDtype.BFLOAT16), start, stop));
        values[layer].set(s.sliceUpdate(values[layer], s.astype(v, MlxDtype.BFLOAT16), start, stop));
        boolean causal = rows > 1;
        if (length == 0) {
            return s.attention(s.astype(q, dtype), s.astype(k, dtype), s.astype(v, dtype), scale, causal);
        }
        int[] all = {1, numKvHeads, length + rows, headDim};
        MlxArray kAll = s.astype(s.slice(keys[layer], new int[4], all), dtype);
        MlxArray vAll = s.astype(s.slice(values[layer], new int[4], all), dtype);
        return s.attention(s.astype(q, dtype), kAll, vAll, scale, causal);
    }

    private MlxArray[] allArrays() {
        MlxArray[] all = new MlxArray[2 * layers];
        for (int l = 0; l < layers; l++) {
            all[2 * l] = keys[l];
            all[2 * l + 1] = values[l];
        }
        return all;
    }

    /** The K and V arrays of a layer, to evaluate with the step's outputs. */
    @Override
    public MlxArray[] arrays(int layer) {
        return new MlxArray[] {keys[layer], values[layer]};
    }

    private void ensureCapacity(MlxScope s, int tokens) {
        if (tokens <= capacity) {
            return;
        }
        int grown = Math.min(maxTokens(), (tokens + STEP - 1) / STEP * STEP);
        for (int l = 0; l < layers; l++) {
            MlxArray tailK = s.zeros(MlxDtype.BFLOAT16, 1, numKvHeads, grown - capacity, headDim);
            MlxArray tailV = s.zeros(MlxDtype.BFLOAT16, 1, numKvHeads, grown - capacity, headDim);
            keys[l].set(capacity == 0 ? tailK : s.concatenate(2, keys[l], tailK));
            values[l].set(capacity == 0 ? tailV : s.concatenate(2, values[l], tailV));
        }
        // not evaluated here: the growth joins the graph of the step that needs it (every layer's arrays are
        // among a forward's outputs), so a step that grows the cache is still one evaluation
        capacity = grown;
    }

    @Override
    public void attend(int layer, int rowOffset, int rows, float[] q, float[] k, float[] v, float[] out) {
        MlxSequenceKvs.attend(this, numHeads, numKvHeads, headDim, layer, rowOffset, rows, q, k, v, out, this::allArrays);
    }

    @Override
    public void exportLayer(int layer, int from, int count, MemorySegment dst) {
        MemorySegment exact = checkExport(from, count, dst);
        if (count == 0) {
            return;
        }
        backend.device().run(s -> {
            int[] start = {0, 0, from, 0};
            int[] stop = {1, numKvHeads, from + count, headDim};
            MlxArray k = s.transpose(s.slice(keys[layer], start, stop), 0, 2, 1, 3);   // (1, count, numKvHeads, headDim)
            MlxArray v = s.transpose(s.slice(values[layer], start, stop), 0, 2, 1, 3);
            s.copyBits16(s.concatenate(3, k, v), exact); // (1, count, numKvHeads, 2·headDim), native = little-endian
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
            ensureCapacity(s, length + count);
            MlxArray kv = s.fromSegment(exact, MlxDtype.BFLOAT16, 1, count, numKvHeads, 2 * headDim);
            MlxArray k = s.transpose(s.slice(kv, new int[4], new int[] {1, count, numKvHeads, headDim}), 0, 2, 1, 3);
            MlxArray v = s.transpose(s.slice(kv, new int[] {0, 0, 0, headDim},
                    new int[] {1, count, numKvHeads, 2 * headDim}), 0, 2, 1, 3);
            int[] start = {0, 0, length, 0};
            int[] stop = {1, numKvHeads, length + count, headDim};
            keys[layer].set(s.sliceUpdate(keys[layer], k, start, stop));
            values[layer].set(s.sliceUpdate(values[layer], v, start, stop));
            s.eval(allArrays()); // every layer: a growth above left each one pending
        });
    }

    @Override
    protected void free() {
        backend.device().heldRun(store::close);
    }
}
