package io.tqserve.backend.mlx;

import io.tqserve.backend.DeviceKv;
import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxScope;

/** What the MLX decoder needs of a device KV cache (bf16 {@link MlxKvCache} or {@link MlxTurboKvCache}). */
sealed interface MlxSequenceKv extends DeviceKv permits MlxKvCache, MlxTurboKvCache {

    MlxBackend backend();

    /**
     * Stores k, v (1, numKvHeads, rows, headDim) of {@code layer} at positions length() .. length()+rows-1 and
     * returns the attention of q (1, numHeads, rows, headDim) over the cache, as (1, numHeads, rows, headDim) in
     * {@code dtype}; the graph is not evaluated.
     */
    MlxArray attention(MlxScope s, int layer, MlxArray q, MlxArray k, MlxArray v, int rows, MlxDtype dtype);

    /** The arrays of a layer the step writes, to evaluate with the step's outputs. */
    MlxArray[] arrays(int layer);
}
