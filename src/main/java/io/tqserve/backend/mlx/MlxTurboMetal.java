package io.tqserve.backend.mlx;

import io.tqserve.backend.DeviceTurboSpec;
import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxMetalKernel;
import io.tqserve.backend.mlx.ffm.MlxMetalKernel.Output;
import io.tqserve.backend.mlx.ffm.MlxMetalKernel.TemplateArg;
import io.tqserve.backend.mlx.ffm.MlxScope;
import java.util.List;

/**
 * The decode step's attention over the quantized tokens of a {@link MlxTurboKvCache} as two Metal kernels
 * ({@code tqserve.backend.mlx.turbo-kernel=metal}), in place of {@link MlxTurboAttention}'s per-block ops: each
 * reads the cache's packed sections where they lie, so neither the codes nor anything decoded from them is
 * materialised.
 *
 * <ul>
 *   <li>{@link #SCORES_SOURCE}: one thread per (token, query row, KV head) unpacks the token's key codes from the
 *       LSB-first bitstream ({@code docs/kv-format.md}) and computes Σ_g scale_g·(q_g·codes_g + zero_g·Σq_g), the
 *       factoring of the ops path.</li>
 *   <li>{@link #VALUES_SOURCE}: one thread per (rotated dimension, query row, KV head, chunk of {@link #CHUNK}
 *       tokens) sums w_t·(c[code_t]·scale_t) over its chunk; the chunks' partial sums are added by an op, giving the
 *       rotated-domain value sum; the inverse Hadamard transform, the sign flip, the softmax and the bf16 prefix stay
 *       ops ({@link MlxTurboAttention}).</li>
 * </ul>
 *
 * Both compute in float32 from the fp16 scales and zeros, as the ops path does; the sums run in token (or element)
 * order, so results differ from the ops path's blocked matmuls by float rounding only. The ops path remains the
 * default and the reference ({@code MlxTurboMetalEmulationTest} checks these sources against the Java codec on
 * the CPU; {@code MlxTurboMetalParityTest} against the ops path where Metal exists).
 */
final class MlxTurboMetal implements AutoCloseable {
    /** Inputs of the scores kernel: q (H, m, D) float32 and the cache's K sections, (1, H, capacity, width). */
    static final List<String> SCORES_INPUTS = List.of("q", "kc", "ks", "kz");
    /** Inputs of the values kernel: softmax weights (H, m, n), the cache's V sections and the codebook. */
    static final List<String> VALUES_INPUTS = List.of("w", "vc", "vs", "cent");

    /** Body of {@code tq_scores}: template D (head_dim), KB (key bits), KSIGNED; grid (n, m, H) → scores (H, m, n). */
    static final String SCORES_SOURCE = """
            uint t = thread_position_in_grid.x;
            uint r = thread_position_in_grid.y;
            uint h = thread_position_in_grid.z;
            uint n = threads_per_grid.x;
            uint m = threads_per_grid.y;
            uint entry = h * uint(kc_shape[2]) + t;
            const device float* qr = q + (h * m + r) * D;
            const device uint8_t* codes = kc + entry * (D * KB / 8);
            uint mask = (1u << KB) - 1u;
            float acc = 0.0f;
            for (uint g = 0; g < D / 32; g++) {
                float dot = 0.0f;
                float qs = 0.0f;
                for (uint i = g * 32; i < g * 32 + 32; i++) {
                    uint bit = i * KB;
                    uint word = uint(codes[bit >> 3]);
                    if ((bit & 7u) + KB > 8) {
                        word |= uint(codes[(bit >> 3) + 1]) << 8;
                    }
                    int code = int((word >> (bit & 7u)) & mask);
                    if (KSIGNED && code > 127) {
                        code -= 256;
                    }
                    dot = metal::fma(qr[i], float(code), dot);
                    qs += qr[i];
                }
                float scale = float(ks[entry * (D / 32) + g]);
                float zero = float(kz[entry * (D / 32) + g]);
                acc = metal::fma(scale, metal::fma(zero, qs, dot), acc);
            }
            scores[(h * m + r) * n + t] = acc;
            """;

    /**
     * Body of {@code tq_values}: template D, VB (value bits), CHUNK (tokens per thread); grid (D, m, H·chunks) →
     * partial rotated sums (chunks, H, m, D), chunk c summing tokens [c·CHUNK, (c+1)·CHUNK) in order.
     */
    static final String VALUES_SOURCE = """
            uint j = thread_position_in_grid.x;
            uint r = thread_position_in_grid.y;
            uint m = threads_per_grid.y;
            uint n = uint(w_shape[2]);
            uint chunks = (n + CHUNK - 1) / CHUNK;
            uint heads = threads_per_grid.z / chunks;
            uint h = thread_position_in_grid.z / chunks;
            uint c = thread_position_in_grid.z % chunks;
            uint capacity = uint(vc_shape[2]);
            const device float* wr = w + (h * m + r) * n;
            uint bit = j * VB;
            uint at = bit >> 3;
            uint shift = bit & 7u;
            bool straddles = shift + VB > 8;
            uint mask = (1u << VB) - 1u;
            uint end = metal::min(n, (c + 1) * CHUNK);
            float acc = 0.0f;
            for (uint t = c * CHUNK; t < end; t++) {
                uint entry = h * capacity + t;
                const device uint8_t* codes = vc + entry * (D * VB / 8);
                uint word = uint(codes[at]);
                if (straddles) {
                    word |= uint(codes[at + 1]) << 8;
                }
                float v = cent[(word >> shift) & mask] * float(vs[entry * (D / 32) + j / 32]);
                acc = metal::fma(wr[t], v, acc);
            }
            out[((c * heads + h) * m + r) * D + j] = acc;
            """;

    /** Tokens one thread of {@code tq_values} sums: a chunk per thread keeps long contexts spread over the GPU. */
    static final int CHUNK = 256;

    /** Threads per threadgroup along x (MLX clamps it to the grid). */
    private static final int GROUP = 256;

    private final MlxMetalKernel scores;
    private final MlxMetalKernel values;

    /**
     * Creates both kernels (MLX compiles an instantiation on its first use per head_dim and bit widths); fails with
     * MLX's message where MLX has no Metal back-end.
     */
    MlxTurboMetal(Mlx mlx) {
        this.scores = MlxMetalKernel.create(mlx, "tq_scores", SCORES_INPUTS, List.of("scores"), SCORES_SOURCE);
        try {
            this.values = MlxMetalKernel.create(mlx, "tq_values", VALUES_INPUTS, List.of("out"), VALUES_SOURCE);
        } catch (RuntimeException e) {
            scores.close();
            throw e;
        }
    }

    /** Scores (H, m, n) of queries qf (H, m, D) float32 over the first n quantized tokens of layer's keys. */
    MlxArray scores(MlxScope s, DeviceTurboSpec spec, MlxTurboKvCache c, int layer, MlxArray qf, int m, int n) {
        int h = spec.numKvHeads();
        return scores.apply(s, List.of(qf, c.keyCodes(layer), c.keyScales(layer), c.keyZeros(layer)),
                List.of(new Output(new int[] {h, m, n}, MlxDtype.FLOAT32)), new int[] {n, m, h},
                new int[] {GROUP, 1, 1}, List.of(TemplateArg.of("D", spec.headDim()),
                        TemplateArg.of("KB", spec.kBits()), TemplateArg.of("KSIGNED", spec.kSigned())))[0];
    }

    /**
     * Rotated-domain sums (H, m, D) of softmax weights w (H, m, n) over the first n quantized tokens' values: the
     * kernel's per-chunk partial sums, added over the chunks.
     */
    MlxArray valuesRotated(MlxScope s, DeviceTurboSpec spec, MlxTurboKvCache c, int layer, MlxArray w,
            MlxArray centroids, int m, int n) {
        int h = spec.numKvHeads();
        int d = spec.headDim();
        int chunks = (n + CHUNK - 1) / CHUNK;
        MlxArray partial = values.apply(s, List.of(w, c.valueCodes(layer), c.valueScales(layer), centroids),
                List.of(new Output(new int[] {chunks, h, m, d}, MlxDtype.FLOAT32)), new int[] {d, m, h * chunks},
                new int[] {Math.min(GROUP, d), 1, 1}, List.of(TemplateArg.of("D", d),
                        TemplateArg.of("VB", spec.vBits()), TemplateArg.of("CHUNK", CHUNK)))[0];
        return chunks == 1 ? s.reshape(partial, h, m, d) : s.sum(partial, 0, false);
    }

    @Override
    public void close() {
        try {
            scores.close();
        } finally {
            values.close();
        }
    }
}
