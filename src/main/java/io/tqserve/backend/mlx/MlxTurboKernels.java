package io.tqserve.backend.mlx;

import io.tqserve.backend.DeviceTurboSpec;
import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxCustomKernel;
import io.tqserve.backend.mlx.ffm.MlxCustomKernel.Gpu;
import io.tqserve.backend.mlx.ffm.MlxCustomKernel.Output;
import io.tqserve.backend.mlx.ffm.MlxCustomKernel.TemplateArg;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxScope;
import java.util.List;

/**
 * The decode step's attention over the quantized tokens of a {@link MlxTurboKvCache} as one fused kernel and a
 * small reduction ({@code tqserve.backend.mlx.turbo-kernel=metal|cuda}, or {@code auto} on a GPU), in place of
 * {@link MlxTurboAttention}'s per-block ops: {@code tq_decode} reads the cache's packed sections where they lie and
 * runs scores, an online softmax and the weighted values per block of {@link #BLOCK} tokens in one pass;
 * {@code tq_reduce} merges the blocks. Neither the codes nor anything decoded from them is materialised, and a step
 * issues the same two kernels at every context length. Sources: {@link MlxTurboKernelSource}, one body per kernel
 * for Metal and CUDA.
 */
final class MlxTurboKernels implements AutoCloseable {
    /** Quantized tokens one SIMD group of {@code tq_decode} reads: a context of n tokens runs ⌈n/BLOCK⌉ groups. */
    static final int BLOCK = 64;

    /** One kernel's application, as {@link MlxCustomKernel#apply}. */
    @FunctionalInterface
    interface Launcher {
        MlxArray[] apply(MlxScope s, List<MlxArray> inputs, List<Output> outputs, int[] grid, int[] group,
                List<TemplateArg> args);
    }

    private final Gpu gpu;
    private final Launcher decode;
    private final Launcher reduce;
    private final Runnable onClose;

    /** The kernels as launched by {@code decode} and {@code reduce}; {@code onClose} releases them. */
    MlxTurboKernels(Gpu gpu, Launcher decode, Launcher reduce, Runnable onClose) {
        this.gpu = gpu;
        this.decode = decode;
        this.reduce = reduce;
        this.onClose = onClose;
    }

    /**
     * Creates both kernels in {@code gpu}'s language through MLX (which compiles an instantiation on first use per
     * head_dim and bit widths); fails with MLX's message where MLX has no such back-end.
     */
    static MlxTurboKernels open(Mlx mlx, Gpu gpu) {
        MlxCustomKernel d = MlxCustomKernel.create(mlx, gpu, "tq_decode", MlxTurboKernelSource.DECODE_INPUTS,
                MlxTurboKernelSource.DECODE_OUTPUTS, MlxTurboKernelSource.source(gpu, MlxTurboKernelSource.DECODE_BODY),
                MlxTurboKernelSource.header(gpu));
        try {
            MlxCustomKernel r = MlxCustomKernel.create(mlx, gpu, "tq_reduce", MlxTurboKernelSource.REDUCE_INPUTS,
                    MlxTurboKernelSource.REDUCE_OUTPUTS,
                    MlxTurboKernelSource.source(gpu, MlxTurboKernelSource.REDUCE_BODY),
                    MlxTurboKernelSource.header(gpu));
            return new MlxTurboKernels(gpu, d::apply, r::apply, () -> {
                try {
                    d.close();
                } finally {
                    r.close();
                }
            });
        } catch (RuntimeException e) {
            d.close();
            throw e;
        }
    }

    /** The kernels' language. */
    Gpu gpu() {
        return gpu;
    }

    /** Template arguments of {@code tq_decode} for a cache of {@code spec}. */
    static List<TemplateArg> decodeArgs(DeviceTurboSpec spec) {
        return decodeArgs(spec.headDim(), spec.kBits(), spec.kSigned(), spec.vBits(), BLOCK);
    }

    /** Template arguments of {@code tq_decode}: head_dim d, key bits, signed keys, value bits, tokens per group. */
    static List<TemplateArg> decodeArgs(int d, int kBits, boolean kSigned, int vBits, int block) {
        float scale = (float) (1.0 / Math.sqrt(d)); // as the ops path scales its scores
        return List.of(TemplateArg.of("D", d), TemplateArg.of("KB", kBits), TemplateArg.of("KSIGNED", kSigned),
                TemplateArg.of("VB", vBits), TemplateArg.of("BLOCK", block),
                TemplateArg.of("SCALE_BITS", Float.floatToRawIntBits(scale)));
    }

    /**
     * The softmax-weighted rotated-domain value sums of queries qf (H, m, D) float32 over the first n quantized
     * tokens of layer: {out (H, m, D) normalised by the softmax sum, lse (H, m, 1) the log of Σ e^score}, the scores
     * scaled by 1/√D.
     */
    MlxArray[] attend(MlxScope s, DeviceTurboSpec spec, MlxTurboKvCache c, int layer, MlxArray qf, MlxArray centroids,
            int m, int n) {
        int h = spec.numKvHeads();
        int d = spec.headDim();
        int blocks = (n + BLOCK - 1) / BLOCK;
        MlxArray meta = s.fromInts(new int[] {n}, 0, 1, 1);
        MlxArray part = decode.apply(s, List.of(qf, meta, c.keyCodes(layer), c.keyScales(layer), c.keyZeros(layer),
                        c.valueCodes(layer), c.valueScales(layer), centroids),
                List.of(new Output(new int[] {h, m, blocks, d + 2}, MlxDtype.FLOAT32)),
                new int[] {MlxTurboKernelSource.SIMD * blocks, m, h}, new int[] {MlxTurboKernelSource.SIMD, 1, 1},
                decodeArgs(spec))[0];
        return reduce.apply(s, List.of(part), List.of(new Output(new int[] {h, m, d}, MlxDtype.FLOAT32),
                        new Output(new int[] {h, m, 1}, MlxDtype.FLOAT32)), new int[] {d, m, h}, new int[] {d, 1, 1},
                List.of(TemplateArg.of("D", d)));
    }

    @Override
    public void close() {
        onClose.run();
    }
}
