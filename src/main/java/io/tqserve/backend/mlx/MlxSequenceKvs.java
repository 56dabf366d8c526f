package io.tqserve.backend.mlx;

import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxScope;
import java.util.Arrays;
import java.util.function.Supplier;

/** The SPI's per-layer {@code attend} of the MLX device caches, for the Java forward (one evaluation per call). */
final class MlxSequenceKvs {
    private MlxSequenceKvs() {
    }

    /**
     * Uploads rows [rowOffset, rowOffset+rows) of q (numHeads·headDim per row) and k, v (numKvHeads·headDim),
     * runs the cache's {@link MlxSequenceKv#attention} in float32, evaluates it with every array the cache holds and
     * copies the output rows into out.
     */
    static void attend(MlxSequenceKv cache, int numHeads, int numKvHeads, int headDim, int layer, int rowOffset,
            int rows, float[] q, float[] k, float[] v, float[] out, Supplier<MlxArray[]> allArrays) {
        int qDim = numHeads * headDim;
        int kvDim = numKvHeads * headDim;
        MlxBackend backend = cache.backend();
        backend.device().run(s -> {
            MlxArray qa = s.transpose(s.fromFloatsAt(q, rowOffset * qDim, rows * qDim, 1, rows, numHeads, headDim), 0,
                    2, 1, 3);
            MlxArray ka = s.transpose(s.fromFloatsAt(k, rowOffset * kvDim, rows * kvDim, 1, rows, numKvHeads, headDim),
                    0, 2, 1, 3);
            MlxArray va = s.transpose(s.fromFloatsAt(v, rowOffset * kvDim, rows * kvDim, 1, rows, numKvHeads, headDim),
                    0, 2, 1, 3);
            MlxArray o = s.transpose(cache.attention(s, layer, qa, ka, va, rows, MlxDtype.FLOAT32), 0, 2, 1, 3);
            MlxArray[] all = allArrays.get(); // after the attention: it may have grown the cache
            MlxArray[] outs = Arrays.copyOf(all, all.length + 1);
            outs[all.length] = o;
            s.eval(outs);
            s.copyFloats(o, out, rowOffset * qDim);
        });
    }
}
