package io.tqserve.backend.mlx;

import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxOps;

/**
 * A linear layer's weight on the device, as mlx-lm's {@code nn.Linear} / {@code nn.QuantizedLinear} (and, for the
 * embedding, {@code nn.Embedding} / {@code nn.QuantizedEmbedding}) hold it.
 *
 * <ul>
 *   <li>dense: {@code weight} (out, in) as stored, and {@code transposed} (in, out), a view kept so that
 *       y = x · w is a plain matmul (null where the layer is only looked up, e.g. an untied embedding);</li>
 *   <li>group-affine quantized: {@code weight} the packed uint32 words (out, in·bits/32), {@code scales} and
 *       {@code biases} (out, in/groupSize) in the checkpoint's dtype, nothing dequantized: y = x · wᵀ runs as
 *       MLX's {@code quantized_matmul} with {@code transpose = true}, and a lookup takes the rows of the words,
 *       scales and biases and dequantizes those rows only.</li>
 * </ul>
 *
 * @param dtype the dtype inputs are given in (the compute dtype)
 */
record MlxLinear(MlxArray weight, MlxArray transposed, MlxArray scales, MlxArray biases, int groupSize, int bits,
        MlxDtype dtype) {

    static MlxLinear dense(MlxArray weight, MlxArray transposed) {
        return new MlxLinear(weight, transposed, null, null, 0, 0, weight.dtype());
    }

    static MlxLinear quantized(MlxArray words, MlxArray scales, MlxArray biases, int groupSize, int bits,
            MlxDtype dtype) {
        return new MlxLinear(words, null, scales, biases, groupSize, bits, dtype);
    }

    boolean quantized() {
        return scales != null;
    }

    /** x · wᵀ for x (…, in) in {@link #dtype}. */
    MlxArray apply(MlxOps s, MlxArray x) {
        if (quantized()) {
            return s.quantizedMatmul(x, weight, scales, biases, groupSize, bits);
        }
        if (transposed == null) {
            throw new IllegalStateException("a lookup-only weight has no transposed view");
        }
        return s.matmul(x, transposed);
    }

    /**
     * Rows {@code ids} of the (out, in) matrix: a take on a dense weight; on a quantized one the rows of words,
     * scales and biases, dequantized in float32 when {@code float32} (as the CPU backend dequantizes: widening the
     * scales and biases is exact) or else in the scales' dtype, as mlx-lm's QuantizedEmbedding.
     */
    MlxArray rows(MlxOps s, MlxArray ids, boolean float32) {
        MlxArray w = s.take(weight, ids, 0);
        if (!quantized()) {
            return w;
        }
        MlxArray sc = s.take(scales, ids, 0);
        MlxArray b = s.take(biases, ids, 0);
        if (float32 && sc.dtype() != MlxDtype.FLOAT32) {
            sc = s.astype(sc, MlxDtype.FLOAT32);
            b = s.astype(b, MlxDtype.FLOAT32);
        }
        return s.dequantize(w, sc, b, groupSize, bits, null);
    }
}
