package io.tqserve.backend.mlx;

import io.tqserve.backend.DeviceTurboSpec;
import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxScope;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Attention over a {@link MlxTurboKvCache} as MLX ops, the device counterpart of the Java fused path
 * ({@code kv.turbo.FusedScores}, {@code FusedValues}): nothing is decoded to full-precision K or V for the whole
 * context. The quantized tokens are read in blocks of {@link #BLOCK}, and per block
 *
 * <ul>
 *   <li>scores come from the key codes: per scale group g, q·k̂ = scale_g·(q_g·codes_g + zero_g·Σq_g), so the
 *       block's codes meet the queries as small integers in one batched matmul and the fp16 scale and zero
 *       apply per group afterwards;</li>
 *   <li>values accumulate in the rotated domain: the softmax weights multiply c[code]·scale_g (the codebook
 *       gather times the group's RMS scale), summed over blocks; one inverse Walsh–Hadamard transform and the
 *       sign flip per output row turn the sum into the original domain.</li>
 * </ul>
 *
 * The bf16 prefix (quantizedKvStart) is attended in plain float32. Query heads sharing a KV head (GQA) are
 * stacked as rows of one matmul against their KV head's codes, so the cache is read once per KV head. With a
 * kernel path ({@code tqserve.backend.mlx.turbo-kernel=metal|cuda}, or {@code auto} on a GPU) a decode step's
 * attention over the quantized tokens is {@link MlxTurboKernels}' fused kernel (scores, online softmax and rotated
 * value sums in one pass) and its reduction; the bf16 prefix joins it through the log of the quantized tokens'
 * softmax mass. Prefill chunks (several query rows, causal mask) keep the ops path.
 */
final class MlxTurboAttention {
    /** Quantized tokens read per block. */
    static final int BLOCK = 256;

    private final DeviceTurboSpec spec;
    private final float scale;
    private final float[] signs;
    private final float[] centroids;
    private final MlxTurboKernels kernels; // null: ops only

    /** kernels: the GPU kernels for decode steps, or null for the ops path everywhere. */
    MlxTurboAttention(DeviceTurboSpec spec, MlxTurboKernels kernels) {
        this.spec = spec;
        this.kernels = kernels;
        this.scale = (float) (1.0 / Math.sqrt(spec.headDim()));
        this.signs = spec.signs().clone();
        this.centroids = spec.centroids().clone();
    }

    /**
     * The attention of q (1, numHeads, rows, headDim) at positions length .. length+rows-1 over the cache's
     * first length+rows tokens (already stored), as (1, numHeads, rows, headDim) float32.
     */
    MlxArray attend(MlxScope s, MlxTurboKvCache c, int layer, MlxArray q, int length, int rows) {
        int kvHeads = spec.numKvHeads();
        int d = spec.headDim();
        int m = spec.numHeads() / kvHeads * rows; // query rows per KV head
        int n = length + rows;
        int nP = Math.min(n, c.prefixTokens());
        int nQ = n - nP;
        MlxArray qf = s.reshape(s.astype(q, MlxDtype.FLOAT32), kvHeads, m, d);
        if (kernels != null && rows == 1 && nQ > 0) { // decode steps only: no causal mask inside the kernel
            return s.reshape(fused(s, c, layer, qf, m, nP, nQ), 1, spec.numHeads(), rows, d);
        }
        List<MlxArray> scoreParts = new ArrayList<>();
        if (nP > 0) {
            scoreParts.add(s.matmul(qf, s.transpose(c.prefixRows(s, c.prefixKeys(layer), nP), 0, 2, 1)));
        }
        if (nQ > 0) {
            int groups = spec.groups();
            MlxArray qg = s.transpose(s.reshape(qf, kvHeads, m, groups, DeviceTurboSpec.GROUP), 0, 2, 1,
                    3); // (H, G, m, 32)
            MlxArray qSum = s.sum(qg, 3, true); // (H, G, m, 1)
            for (int b = 0; b < nQ; b += BLOCK) {
                int e = Math.min(nQ, b + BLOCK);
                scoreParts.add(blockScores(s, c, layer, qg, qSum, b, e));
            }
        }
        MlxArray scores = s.multiply(scoreParts.size() == 1 ? scoreParts.get(0)
                : s.concatenate(2, scoreParts.toArray(MlxArray[]::new)), s.scalar(scale)); // (H, m, n)
        if (rows > 1) {
            scores = s.reshape(s.add(s.reshape(scores, kvHeads, m / rows, rows, n), causalMask(s, length, rows)),
                    kvHeads, m, n);
        }
        MlxArray w = s.softmax(scores, 2);
        MlxArray out = null;
        if (nP > 0) {
            MlxArray wp = s.slice(w, new int[3], new int[] {kvHeads, m, nP});
            out = s.matmul(wp, c.prefixRows(s, c.prefixValues(layer), nP));
        }
        if (nQ > 0) {
            MlxArray rotated = null;
            for (int b = 0; b < nQ; b += BLOCK) {
                int e = Math.min(nQ, b + BLOCK);
                MlxArray wb = s.slice(w, new int[] {0, 0, nP + b}, new int[] {kvHeads, m, nP + e});
                MlxArray acc = s.matmul(wb, blockValuesRotated(s, c, layer, b, e));
                rotated = rotated == null ? acc : s.add(rotated, acc);
            }
            MlxArray values = s.multiply(s.hadamard(rotated), s.fromFloats(signs, d)); // (H·y) ⊙ σ, once per row
            out = out == null ? values : s.add(out, values);
        }
        return s.reshape(out, 1, spec.numHeads(), rows, d);
    }

    /**
     * A decode step's attention (H, m, D) through the fused kernel: the kernel's normalised rotated sums over the nQ
     * quantized tokens, turned to the original domain; with a bf16 prefix of nP tokens, one softmax over the prefix
     * scores and the quantized tokens' log-mass weighs the prefix rows and the quantized part.
     */
    private MlxArray fused(MlxScope s, MlxTurboKvCache c, int layer, MlxArray qf, int m, int nP, int nQ) {
        int kvHeads = spec.numKvHeads();
        int d = spec.headDim();
        MlxArray[] r = kernels.attend(s, spec, c, layer, qf, s.fromFloats(centroids, centroids.length), m, nQ);
        MlxArray quantized = s.multiply(s.hadamard(r[0]), s.fromFloats(signs, d)); // (H·y) ⊙ σ
        if (nP == 0) {
            return quantized;
        }
        MlxArray prefixScores = s.multiply(s.matmul(qf, s.transpose(c.prefixRows(s, c.prefixKeys(layer), nP), 0, 2, 1)),
                s.scalar(scale)); // (H, m, nP)
        MlxArray w = s.softmax(s.concatenate(2, prefixScores, r[1]), 2); // (H, m, nP + 1)
        MlxArray wp = s.slice(w, new int[3], new int[] {kvHeads, m, nP});
        MlxArray wq = s.slice(w, new int[] {0, 0, nP}, new int[] {kvHeads, m, nP + 1});
        return s.add(s.matmul(wp, c.prefixRows(s, c.prefixValues(layer), nP)), s.multiply(wq, quantized));
    }

    /** Scores (H, m, e−b) of the queries over quantized tokens [b, e), from the key codes. */
    private MlxArray blockScores(MlxScope s, MlxTurboKvCache c, int layer, MlxArray qg, MlxArray qSum, int b, int e) {
        int kvHeads = spec.numKvHeads();
        int nb = e - b;
        int groups = spec.groups();
        MlxArray codes = MlxTurboBits.unpack(s, c.rows(s, c.keyCodes(layer), b, e), spec.kBits(), spec.kSigned());
        MlxArray ct = s.transpose(s.reshape(s.astype(codes, MlxDtype.FLOAT32), kvHeads, nb, groups,
                DeviceTurboSpec.GROUP), 0, 2, 3, 1); // (H, G, 32, nb)
        MlxArray dots = s.matmul(qg, ct); // (H, G, m, nb)
        MlxArray ks = groupField(s, c.rows(s, c.keyScales(layer), b, e), nb);
        MlxArray kz = groupField(s, c.rows(s, c.keyZeros(layer), b, e), nb);
        return s.sum(s.multiply(ks, s.add(dots, s.multiply(kz, qSum))), 1, false); // Σ_g scale·(q·codes + zero·Σq)
    }

    /** (H·nb, G) fp16 per-group field → (H, G, 1, nb) float32. */
    private MlxArray groupField(MlxScope s, MlxArray field, int nb) {
        MlxArray f = s.reshape(s.astype(field, MlxDtype.FLOAT32), spec.numKvHeads(), nb, spec.groups());
        return s.expandDims(s.transpose(f, 0, 2, 1), 2);
    }

    /** Rotated-domain values (H, e−b, headDim) of quantized tokens [b, e): fl32(c[code]·scale_g). */
    private MlxArray blockValuesRotated(MlxScope s, MlxTurboKvCache c, int layer, int b, int e) {
        int kvHeads = spec.numKvHeads();
        int nb = e - b;
        MlxArray codes = MlxTurboBits.unpack(s, c.rows(s, c.valueCodes(layer), b, e), spec.vBits(), false);
        MlxArray cent = s.take(s.fromFloats(centroids, centroids.length), codes, 0); // (H·nb, d)
        MlxArray grouped = s.reshape(cent, kvHeads * nb, spec.groups(), DeviceTurboSpec.GROUP);
        MlxArray vs = s.expandDims(s.astype(c.rows(s, c.valueScales(layer), b, e), MlxDtype.FLOAT32), 2);
        return s.reshape(s.multiply(grouped, vs), kvHeads, nb, spec.headDim());
    }

    /** (rows, length+rows) additive mask: row r sees positions up to length + r. */
    private static MlxArray causalMask(MlxScope s, int length, int rows) {
        int n = length + rows;
        float[] mask = new float[rows * n];
        for (int r = 0; r < rows; r++) {
            Arrays.fill(mask, r * n + length + r + 1, (r + 1) * n, Float.NEGATIVE_INFINITY);
        }
        return s.fromFloats(mask, rows, n);
    }
}
