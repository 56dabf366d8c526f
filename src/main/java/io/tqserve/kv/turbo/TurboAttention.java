package io.tqserve.kv.turbo;

import io.tqserve.backend.Kernels;
import io.tqserve.kv.AttentionShape;
import io.tqserve.kv.Bf16Prefix;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * Attention of one query row over a {@link TurboQuantKvCache} for one KV head and every query head that shares it
 * (GQA), by one of the three {@link AttentionPath}s. Scores of all heads are computed first (bf16 prefix tokens by
 * the backend's kernels, quantized tokens by the path), then a softmax per head ({@link TurboSoftmax}), then the
 * weighted values.
 */
final class TurboAttention {
    private static final int T = TurboBlockLayout.TOKENS;
    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    private final TurboQuantKvCache cache;

    TurboAttention(TurboQuantKvCache cache) {
        this.cache = cache;
    }

    static Scratch scratch() {
        return SCRATCH.get();
    }

    /**
     * Attention of row {@code r} (position n−1) over tokens [0, n) for the query heads of KV head {@code g}: reads
     * q and writes out at ((rowOffset + r)·qDim + head·headDim).
     */
    void attend(AttentionPath path, int layer, int g, int rowOffset, int r, int n, float[] q, float[] out) {
        AttentionShape shape = cache.shape();
        Kernels kernels = cache.kernels();
        TurboBlockLayout lay = cache.blocks();
        int d = shape.headDim();
        int heads = shape.groupSize();
        int groups = lay.groups();
        int qOff = (rowOffset + r) * shape.qDim() + g * heads * d;
        Bf16Prefix prefix = cache.prefix();
        int nP = prefix == null ? 0 : Math.min(prefix.tokens(), n);
        int nT = n - nP;
        int nTPad = (nT + T - 1) / T * T;
        int stride = nP + nTPad;
        float scale = cache.scale();
        MemorySegment[] chunks = cache.chunkArray();
        long headBase = cache.headBase(layer, g);
        TurboKernels tk = cache.turboKernels();
        Scratch s = SCRATCH.get();
        float[] sc = s.scores(heads * stride);
        for (int j = 0; j < heads && nP > 0; j++) {
            prefix.scores(kernels, layer, g, nP, q, qOff + j * d, scale, sc, j * stride);
        }
        if (path == AttentionPath.FUSED) {
            float[] qsum = groupSums(q, qOff, heads, d, groups, s.qsum(heads * groups));
            if (nT > 0) {
                tk.scores(lay, chunks, headBase, nT, q, qOff, heads, qsum, sc, nP, stride, scale, s);
            }
            for (int j = 0; j < heads; j++) {
                tk.softmax(sc, j * stride, n);
            }
            tk.values(lay, chunks, headBase, nT, sc, nP, stride, heads, out, qOff, s);
            for (int j = 0; j < heads; j++) {
                tk.unrotate(out, qOff + j * d, d);
            }
        } else {
            if (nT > 0) {
                float[] kt = s.kt(d * nTPad);
                tk.decodeKeys(lay, chunks, headBase, nT, kt, nTPad, s);
                for (int j = 0; j < heads; j++) {
                    int o = j * stride + nP;
                    Arrays.fill(sc, o, o + nT, 0f);
                    for (int i = 0; i < d; i++) {
                        kernels.axpy(q[qOff + j * d + i], kt, i * nTPad, sc, o, nT);
                    }
                    kernels.scale(sc, o, nT, scale);
                }
            }
            for (int j = 0; j < heads; j++) {
                tk.softmax(sc, j * stride, n);
            }
            boolean deferred = path == AttentionPath.DEFERRED;
            float[] vw = s.vw(nT * d);
            TurboWindow.decodeValues(tk, lay, chunks, headBase, nT, vw, deferred);
            for (int j = 0; j < heads; j++) {
                int o = qOff + j * d;
                Arrays.fill(out, o, o + d, 0f);
                for (int t = 0; t < nT; t++) {
                    kernels.axpy(sc[j * stride + nP + t], vw, t * d, out, o, d);
                }
                if (deferred) {
                    tk.unrotate(out, o, d);
                }
            }
        }
        for (int j = 0; j < heads && nP > 0; j++) {
            prefix.accumulate(kernels, layer, g, nP, sc, j * stride, out, qOff + j * d);
        }
    }

    /**
     * Fused-path attention of {@code rows} consecutive rows r (position n0−1+r, over tokens [0, n0+r)) for the query
     * heads of KV head {@code g}, in one pass over the cache: the rows' query heads are scored and weighted together,
     * as {@link #attend} does for the heads that share a KV head, so each block is fetched from memory once for all
     * rows and stays in L1 while their heads are served, and at 16 lanes each code is converted once per four of the
     * rows' query heads ({@link FusedHeads}). A row's weights past its own last token are zero; the fused kernels accumulate
     * per lane over the tokens in order, so the extra terms add exact zeros and every row's output is bit-identical to
     * {@link #attend} of that row alone. Needs a bf16 prefix (if any) that ends before row 0's last token.
     */
    void attendRows(int layer, int g, int rowOffset, int r0, int rows, int n0, float[] q, float[] out) {
        AttentionShape shape = cache.shape();
        Kernels kernels = cache.kernels();
        TurboBlockLayout lay = cache.blocks();
        int d = shape.headDim();
        int heads = shape.groupSize();
        int hr = rows * heads; // query heads of all rows, row-major
        int groups = lay.groups();
        Bf16Prefix prefix = cache.prefix();
        int nP = prefix == null ? 0 : prefix.tokens();
        int nMax = n0 + rows - 1;
        int nT = nMax - nP;
        int stride = nP + (nT + T - 1) / T * T;
        float scale = cache.scale();
        MemorySegment[] chunks = cache.chunkArray();
        long headBase = cache.headBase(layer, g);
        TurboKernels tk = cache.turboKernels();
        Scratch s = SCRATCH.get();
        float[] qg = s.rowsQ(hr * d);
        for (int r = 0; r < rows; r++) {
            System.arraycopy(q, (rowOffset + r0 + r) * shape.qDim() + g * heads * d, qg, r * heads * d, heads * d);
        }
        float[] sc = s.scores(hr * stride);
        for (int j = 0; j < hr && nP > 0; j++) {
            prefix.scores(kernels, layer, g, nP, qg, j * d, scale, sc, j * stride);
        }
        float[] qsum = groupSums(qg, 0, hr, d, groups, s.qsum(hr * groups));
        tk.scores(lay, chunks, headBase, nT, qg, 0, hr, qsum, sc, nP, stride, scale, s);
        for (int j = 0; j < hr; j++) {
            int n = n0 + j / heads;
            tk.softmax(sc, j * stride, n);
            Arrays.fill(sc, j * stride + n, j * stride + nMax, 0f); // tokens after the row's own: weight 0
        }
        float[] og = s.rowsOut(hr * d);
        tk.values(lay, chunks, headBase, nT, sc, nP, stride, hr, og, 0, s);
        for (int r = 0; r < rows; r++) {
            int o = (rowOffset + r0 + r) * shape.qDim() + g * heads * d;
            System.arraycopy(og, r * heads * d, out, o, heads * d);
            for (int j = 0; j < heads; j++) {
                tk.unrotate(out, o + j * d, d);
                if (nP > 0) {
                    prefix.accumulate(kernels, layer, g, nP, sc, (r * heads + j) * stride, out, o + j * d);
                }
            }
        }
    }

    /** qsum[j·groups + g] = Σ of the 32 elements of group g of query head j (heads at q[qOff + j·d]); returns qsum. */
    private static float[] groupSums(float[] q, int qOff, int heads, int d, int groups, float[] qsum) {
        for (int j = 0; j < heads; j++) {
            for (int gr = 0; gr < groups; gr++) {
                float sum = 0f;
                for (int i = gr * 32; i < gr * 32 + 32; i++) {
                    sum += q[qOff + j * d + i];
                }
                qsum[j * groups + gr] = sum;
            }
        }
        return qsum;
    }

    /** Per-thread buffers, grown on demand. */
    static final class Scratch {
        private float[] scores = new float[0];
        private float[] qsum = new float[0];
        private float[] qb = new float[0];
        private float[] kf = new float[0];
        private float[] kt = new float[0];
        private float[] vw = new float[0];
        private float[] row = new float[0];
        private float[] row2 = new float[0];
        private float[] rowsQ = new float[0];
        private float[] rowsOut = new float[0];
        private int[] codes = new int[0];
        private MemorySegment entry = MemorySegment.ofArray(new byte[0]);

        private static int grow(int have, int n) {
            return Math.max(n, have + have / 2);
        }

        float[] scores(int n) {
            return scores.length >= n ? scores : (scores = new float[grow(scores.length, n)]);
        }

        float[] qsum(int n) {
            return qsum.length >= n ? qsum : (qsum = new float[n]);
        }

        float[] qb(int n) {
            return qb.length >= n ? qb : (qb = new float[n]);
        }

        float[] kf(int n) {
            return kf.length >= n ? kf : (kf = new float[n]);
        }

        float[] kt(int n) {
            return kt.length >= n ? kt : (kt = new float[grow(kt.length, n)]);
        }

        float[] vw(int n) {
            return vw.length >= n ? vw : (vw = new float[grow(vw.length, n)]);
        }

        float[] row(int n) {
            return row.length >= n ? row : (row = new float[n]);
        }

        float[] rowsQ(int n) {
            return rowsQ.length >= n ? rowsQ : (rowsQ = new float[grow(rowsQ.length, n)]);
        }

        float[] rowsOut(int n) {
            return rowsOut.length >= n ? rowsOut : (rowsOut = new float[grow(rowsOut.length, n)]);
        }

        float[] row2(int n) {
            return row2.length >= n ? row2 : (row2 = new float[n]);
        }

        int[] codes(int n) {
            return codes.length >= n ? codes : (codes = new int[n]);
        }

        MemorySegment entry(int bytes) {
            return entry.byteSize() >= bytes ? entry : (entry = MemorySegment.ofArray(new byte[bytes]));
        }
    }
}
