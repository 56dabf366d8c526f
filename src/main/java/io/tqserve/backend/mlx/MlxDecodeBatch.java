package io.tqserve.backend.mlx;

import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxScope;
import java.util.List;

/**
 * The attention of a step's decode rows, one new token for each of B sequences whose bf16 caches share one
 * {@link MlxKvPool}, as a fixed set of ops per layer whatever B (as mlx-lm's batched generation over a padded
 * {@code BatchKVCache}): RoPE of all rows at their own positions ({@code mlx_fast_rope_dynamic} with a (B) offset
 * array), one scatter of the new K and one of the new V to their pool slots, one gather of each sequence's slots
 * padded to the longest sequence (B, numKvHeads, S, headDim), and one {@code mlx_fast_scaled_dot_product_attention}
 * with a boolean mask that hides each row's padding. The index arrays are made once per step and shared by the
 * layers.
 */
final class MlxDecodeBatch {
    private final MlxKvPool pool;
    private final int b;
    private final int len;
    private final float scale;
    private final MlxArray positions;  // (B) int32: each row's position = its cache's length before the step
    private final MlxArray writeSlots; // (B) int32
    private final MlxArray readSlots;  // (B·len) int32, padding repeats a slot of the row's own
    private final MlxArray mask;       // (B, 1, 1, len) bool

    private MlxDecodeBatch(MlxKvPool pool, int b, int len, float scale, MlxArray positions, MlxArray writeSlots,
            MlxArray readSlots, MlxArray mask) {
        this.pool = pool;
        this.b = b;
        this.len = len;
        this.scale = scale;
        this.positions = positions;
        this.writeSlots = writeSlots;
        this.readSlots = readSlots;
        this.mask = mask;
    }

    /** Starts the pass of one row on each cache (all of {@code pool}) and builds the step's index arrays. */
    static MlxDecodeBatch of(MlxScope s, MlxKvPool pool, List<MlxKvCache> caches, float scale) {
        int b = caches.size();
        int[] lengths = new int[b];
        int len = 0;
        for (int i = 0; i < b; i++) {
            MlxKvCache c = caches.get(i);
            if (c.pool() != pool) {
                throw new IllegalArgumentException("a decode batch needs caches of one pool");
            }
            lengths[i] = c.beginRows(s, 1);
            len = Math.max(len, lengths[i] + 1);
        }
        int[] write = new int[b];
        int[] read = new int[b * len];
        int[] seen = new int[b * len];
        for (int i = 0; i < b; i++) {
            MlxKvCache c = caches.get(i);
            write[i] = c.slot(lengths[i]);
            c.slots(0, lengths[i] + 1, read, i * len);
            java.util.Arrays.fill(read, i * len + lengths[i] + 1, (i + 1) * len, write[i]);
            java.util.Arrays.fill(seen, i * len, i * len + lengths[i] + 1, 1);
        }
        MlxArray mask = s.greater(s.fromInts(seen, 0, seen.length, b, 1, 1, len), s.scalar(0));
        return new MlxDecodeBatch(pool, b, len, scale, s.fromInts(lengths, 0, b, b), s.fromInts(write, 0, b, b),
                s.fromInts(read, 0, read.length, read.length), mask);
    }

    /**
     * Stores the rows' k, v of {@code layer} and returns their attention: q (B, numHeads, headDim) and k, v
     * (B, numKvHeads, headDim) before RoPE, in the compute dtype; the result (B, numHeads·headDim) in {@code dtype}.
     */
    MlxArray attend(MlxScope s, int layer, MlxArray q, MlxArray k, MlxArray v, MlxArray ropePeriods, MlxDtype dtype) {
        int heads = q.shape()[1];
        int kvHeads = k.shape()[1];
        int headDim = q.shape()[2];
        MlxArray qr = s.rope(s.reshape(q, b, heads, 1, headDim), headDim, false, 1f, positions, ropePeriods);
        MlxArray kr = s.rope(s.reshape(k, b, kvHeads, 1, headDim), headDim, false, 1f, positions, ropePeriods);
        pool.write(s, layer, writeSlots, s.reshape(kr, b, kvHeads, headDim), v);
        MlxArray[] kv = pool.read(s, layer, readSlots, b, len);
        MlxArray o = s.attention(s.astype(qr, dtype), s.astype(kv[0], dtype), s.astype(kv[1], dtype), scale, mask);
        return s.reshape(o, b, heads * headDim); // (B, numHeads, 1, headDim): one row per sequence
    }

    /** The pool's arrays of {@code layer}, to evaluate with the step. */
    MlxArray[] arrays(int layer) {
        return pool.arrays(layer);
    }
}
