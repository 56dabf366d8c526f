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
 * @param turboKernel how decode steps attend over a device TurboQuant cache
 */
public record MlxOptions(Dtype dtype, long wiredLimit, long cacheLimit, TurboKernel turboKernel) {
    /** {@code wiredLimit}: the device's recommended working set. */
    public static final long RECOMMENDED = -1;
    /** {@code cacheLimit}: leave MLX's default. */
    public static final long MLX_DEFAULT = -1;

    /** The defaults: native dtype, wired limit = recommended working set, MLX's cache limit. */
    public static final MlxOptions DEFAULTS = new MlxOptions(Dtype.NATIVE, RECOMMENDED, MLX_DEFAULT);

    /** The given dtype and limits with the device's TurboQuant attention path ({@link TurboKernel#AUTO}). */
    public MlxOptions(Dtype dtype, long wiredLimit, long cacheLimit) {
        this(dtype, wiredLimit, cacheLimit, TurboKernel.AUTO);
    }

    public MlxOptions {
        if (dtype == null) {
            throw new IllegalArgumentException("tqserve.backend.mlx.dtype must be native or float32");
        }
        if (turboKernel == null) {
            throw new IllegalArgumentException("tqserve.backend.mlx.turbo-kernel must be auto, ops, metal or cuda");
        }
        if (wiredLimit < RECOMMENDED || cacheLimit < MLX_DEFAULT) {
            throw new IllegalArgumentException("MLX limits must be sizes >= 0");
        }
    }

    public MlxOptions withDtype(Dtype d) {
        return new MlxOptions(d, wiredLimit, cacheLimit, turboKernel);
    }

    public MlxOptions withTurboKernel(TurboKernel k) {
        return new MlxOptions(dtype, wiredLimit, cacheLimit, k);
    }

    /** {@code tqserve.backend.mlx.turbo-kernel}: how a decode step attends over a device TurboQuant cache. */
    public enum TurboKernel {
        /** The device's kernel: {@link #METAL} on a Metal device, {@link #CUDA} on a CUDA device, else {@link #OPS}. */
        AUTO,
        /** MLX operations in blocks of tokens ({@code MlxTurboAttention}): every device, the reference. */
        OPS,
        /**
         * The fused decode kernel in Metal ({@code MlxTurboKernels}) reads the packed cache where it lies; needs a
         * Metal device, refused at startup elsewhere. Prefill chunks keep the ops path.
         */
        METAL,
        /** The same fused decode kernel in CUDA; needs MLX's CUDA back-end on a GPU, refused at startup elsewhere. */
        CUDA;

        public static TurboKernel parse(String s) {
            return switch (s == null ? "auto" : s.trim().toLowerCase(Locale.ROOT)) {
                case "auto", "" -> AUTO;
                case "ops" -> OPS;
                case "metal" -> METAL;
                case "cuda" -> CUDA;
                default -> throw new IllegalArgumentException(
                        "tqserve.backend.mlx.turbo-kernel=" + s + " is not one of auto, ops, metal, cuda");
            };
        }

        /** Whether this asks for one GPU language's kernel (metal or cuda). */
        public boolean gpuKernel() {
            return this == METAL || this == CUDA;
        }

        public String wireName() {
            return name().toLowerCase(Locale.ROOT);
        }
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
