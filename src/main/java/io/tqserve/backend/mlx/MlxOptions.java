package io.tqserve.backend.mlx;

import java.util.Locale;

/**
 * How the MLX backend runs ({@code tqserve.backend.mlx.*}).
 *
 * @param dtype      compute dtype of weights, activations and the KV cache
 * @param wiredLimit bytes MLX keeps wired on Metal: {@link #RECOMMENDED} = the device's recommended working set
 *                   (mlx-lm's default), 0 = none
 * @param cacheLimit most bytes of freed buffers MLX keeps for reuse: {@link #MLX_DEFAULT} = MLX's own (its memory
 *                   limit), 0 = none
 */
public record MlxOptions(Dtype dtype, long wiredLimit, long cacheLimit) {
    /** {@code wiredLimit}: the device's recommended working set. */
    public static final long RECOMMENDED = -1;
    /** {@code cacheLimit}: leave MLX's default. */
    public static final long MLX_DEFAULT = -1;

    /** The defaults: native dtype, wired limit = recommended working set, MLX's cache limit. */
    public static final MlxOptions DEFAULTS = new MlxOptions(Dtype.NATIVE, RECOMMENDED, MLX_DEFAULT);

    public MlxOptions {
        if (dtype == null) {
            throw new IllegalArgumentException("tqserve.backend.mlx.dtype must be native or float32");
        }
        if (wiredLimit < RECOMMENDED || cacheLimit < MLX_DEFAULT) {
            throw new IllegalArgumentException("MLX limits must be sizes >= 0");
        }
    }

    public MlxOptions withDtype(Dtype d) {
        return new MlxOptions(d, wiredLimit, cacheLimit);
    }

    /** {@code tqserve.backend.mlx.dtype}. */
    public enum Dtype {
        /**
         * The checkpoint's dtype (bf16/f16) for weights and activations, as mlx-lm runs: the weights are loaded
         * once, without conversion. float32 checkpoints stay float32.
         */
        NATIVE,
        /**
         * Dense weights converted to float32 once at load, activations float32: twice the memory of a bf16 model.
         * Quantized weights stay packed (scales and biases in the checkpoint's dtype); their matmuls run in float32.
         */
        FLOAT32;

        public static Dtype parse(String s) {
            return switch (s == null ? "native" : s.trim().toLowerCase(Locale.ROOT)) {
                case "native", "" -> NATIVE;
                case "float32" -> FLOAT32;
                default -> throw new IllegalArgumentException(
                        "tqserve.backend.mlx.dtype=" + s + " is not one of native, float32");
            };
        }

        public String wireName() {
            return name().toLowerCase(Locale.ROOT);
        }
    }
}
