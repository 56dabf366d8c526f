package io.tqserve.kv;

import io.tqserve.backend.Kernels;
import io.tqserve.backend.Matrix;
import java.util.Arrays;

/**
 * Attention of several consecutive rows (row r at position n0−1+r, over tokens [0, n0+r)) for the query heads of
 * one KV head of a {@link Bf16KvCache}, in one pass over the cache: each key and each value is converted from bf16
 * once for all the rows' query heads instead of once per row and head. Keys are converted four at a time and scored
 * against four queries per call of the backend's {@link Kernels#tile} kernel, which gives the bits of
 * {@link Kernels#matvec} (its contract: batching rows never changes a row's numbers); values are converted once per
 * token and added by {@link Kernels#axpy}, the arithmetic of {@link Kernels#axpyRow} on the same floats, in token
 * order per row. So every row's output is bit-identical to attending that row alone, on either kernel set. No SIMD
 * of its own: the kernels are the backend's, whose scalar twins and parity tests cover them.
 */
final class Bf16Rows {
    private static final int CHUNK = Bf16KvCache.CHUNK;
    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    private Bf16Rows() {
    }

    /**
     * Rows r0..r0+rows−1 of the pass (q and out at (rowOffset + r)·qDim), KV head g; keys and values are the
     * cache's (CHUNK, headDim) blocks indexed [chunk · numKvHeads + g]; n0 = tokens row r0 attends.
     */
    static void attend(Kernels kernels, AttentionShape shape, Matrix[] keys, Matrix[] values, int g, int rowOffset,
            int r0, int rows, int n0, float scale, float[] q, float[] out) {
        int d = shape.headDim();
        int heads = shape.groupSize();
        int kvHeads = shape.numKvHeads();
        int hr = rows * heads; // the rows' query heads, row-major
        int nMax = n0 + rows - 1;
        Scratch s = SCRATCH.get();
        float[] qg = s.q(hr * d);
        for (int r = 0; r < rows; r++) {
            System.arraycopy(q, (rowOffset + r0 + r) * shape.qDim() + g * heads * d, qg, r * heads * d, heads * d);
        }
        float[] sc = s.scores(hr * nMax);
        float[] kf = s.keys(4 * d);
        for (int t = 0; t < nMax; ) { // four keys at a time, never across a chunk
            int within = t % CHUNK;
            int count = Math.min(4, Math.min(nMax - t, CHUNK - within));
            Matrix block = keys[(t / CHUNK) * kvHeads + g];
            for (int i = 0; i < count; i++) {
                kernels.decodeRow(block, within + i, kf, i * d);
            }
            for (int j = 0; j < hr; j += 4) {
                kernels.tile(kf, 0, count, qg, j * d, Math.min(4, hr - j), d, sc, j * nMax + t, nMax);
            }
            t += count;
        }
        for (int j = 0; j < hr; j++) {
            int n = n0 + j / heads;
            kernels.scale(sc, j * nMax, n, scale);
            kernels.softmax(sc, j * nMax, n);
            int o = (rowOffset + r0 + j / heads) * shape.qDim() + (g * heads + j % heads) * d;
            Arrays.fill(out, o, o + d, 0f);
        }
        float[] vf = s.value(d);
        for (int t = 0; t < nMax; t++) {
            kernels.decodeRow(values[(t / CHUNK) * kvHeads + g], t % CHUNK, vf, 0);
            // rows before row t − n0 + 1 end before token t
            for (int j = Math.max(0, t - n0 + 1) * heads; j < hr; j++) {
                int o = (rowOffset + r0 + j / heads) * shape.qDim() + (g * heads + j % heads) * d;
                kernels.axpy(sc[j * nMax + t], vf, 0, out, o, d);
            }
        }
    }

    /** Per-thread buffers, grown on demand. */
    private static final class Scratch {
        private float[] q = new float[0];
        private float[] scores = new float[0];
        private float[] keys = new float[0];
        private float[] value = new float[0];

        float[] q(int n) {
            return q.length >= n ? q : (q = new float[n]);
        }

        float[] scores(int n) {
            return scores.length >= n ? scores : (scores = new float[Math.max(n, scores.length + scores.length / 2)]);
        }

        float[] keys(int n) {
            return keys.length >= n ? keys : (keys = new float[n]);
        }

        float[] value(int n) {
            return value.length >= n ? value : (value = new float[n]);
        }
    }
}
