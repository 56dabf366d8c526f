package io.tqserve.backend.cpu;

import static io.tqserve.backend.cpu.VectorKernels.F;
import static io.tqserve.backend.cpu.VectorKernels.L;
import static io.tqserve.backend.cpu.VectorKernels.sumLanes;

import jdk.incubator.vector.FloatVector;

/**
 * The prefill kernel (a prompt of {@link #MIN_ROWS} or more tokens): four decoded weight rows against every
 * activation row, blocked over the columns so that the weight rows' current block ({@link #KC} columns, 8 KB) stays
 * in L1 while the activation rows stream from L2 past it. Without the blocking each 4x2 tile re-reads whole weight
 * rows (32 KB at 2048 columns, the size of L1) and the loop waits on L2.
 *
 * <p>Bit-identical to {@link VectorKernels#tile} and the decode kernels: each output keeps ONE accumulator vector
 * over its row; between column blocks the accumulators are parked in an array and reloaded unchanged, so the
 * multiply-adds happen in exactly the order of the unblocked loop; then the same fixed-order horizontal sum and the
 * same scalar tail. The scalar twin is {@link ScalarKernels#tile}.
 */
final class BlockedGemm {
    /** Prompts this long or longer take the blocked kernel. */
    static final int MIN_ROWS = 16;
    /** Columns per block: four weight rows of it are 8 KB of floats, a quarter of a 32 KB L1. */
    static final int KC = 512;
    private static final ThreadLocal<float[]> ACC = new ThreadLocal<>();

    private BlockedGemm() {
    }

    /**
     * out[r·outStride + q] = w row q · x row r for four float weight rows (w, stride n, at 0) and xRows activation
     * rows (x, stride n, at 0).
     */
    static void rows4(float[] w, float[] x, int xRows, int n, float[] out, int outOff, int outStride) {
        int need = xRows * 4 * L;
        float[] acc = ACC.get();
        if (acc == null || acc.length < need) {
            acc = new float[need];
            ACC.set(acc);
        }
        java.util.Arrays.fill(acc, 0, need, 0f);
        int full = n / L * L;
        for (int k0 = 0; k0 < full; k0 += KC) {
            int k1 = Math.min(full, k0 + KC);
            int r = 0;
            for (; r + 2 <= xRows; r += 2) {
                tile4x2(w, x, r, n, k0, k1, acc);
            }
            for (; r < xRows; r++) {
                tile4x1(w, x, r, n, k0, k1, acc);
            }
        }
        for (int r = 0; r < xRows; r++) {
            for (int q = 0; q < 4; q++) {
                float s = sumLanes(acc, (4 * r + q) * L);
                for (int k = full; k < n; k++) {
                    s += w[q * n + k] * x[r * n + k];
                }
                out[outOff + r * outStride + q] = s;
            }
        }
    }

    /** Columns [k0, k1) of x rows r, r+1 against the four weight rows, accumulators in acc (4·L per x row). */
    private static void tile4x2(float[] w, float[] x, int r, int n, int k0, int k1, float[] acc) {
        int a = 4 * L * r;
        FloatVector c00 = FloatVector.fromArray(F, acc, a);
        FloatVector c01 = FloatVector.fromArray(F, acc, a + L);
        FloatVector c02 = FloatVector.fromArray(F, acc, a + 2 * L);
        FloatVector c03 = FloatVector.fromArray(F, acc, a + 3 * L);
        FloatVector c10 = FloatVector.fromArray(F, acc, a + 4 * L);
        FloatVector c11 = FloatVector.fromArray(F, acc, a + 5 * L);
        FloatVector c12 = FloatVector.fromArray(F, acc, a + 6 * L);
        FloatVector c13 = FloatVector.fromArray(F, acc, a + 7 * L);
        int x0 = r * n;
        int x1 = x0 + n;
        for (int i = k0; i < k1; i += L) {
            FloatVector v0 = FloatVector.fromArray(F, x, x0 + i);
            FloatVector v1 = FloatVector.fromArray(F, x, x1 + i);
            FloatVector u = FloatVector.fromArray(F, w, i);
            c00 = u.fma(v0, c00);
            c10 = u.fma(v1, c10);
            u = FloatVector.fromArray(F, w, n + i);
            c01 = u.fma(v0, c01);
            c11 = u.fma(v1, c11);
            u = FloatVector.fromArray(F, w, 2 * n + i);
            c02 = u.fma(v0, c02);
            c12 = u.fma(v1, c12);
            u = FloatVector.fromArray(F, w, 3 * n + i);
            c03 = u.fma(v0, c03);
            c13 = u.fma(v1, c13);
        }
        c00.intoArray(acc, a);
        c01.intoArray(acc, a + L);
        c02.intoArray(acc, a + 2 * L);
        c03.intoArray(acc, a + 3 * L);
        c10.intoArray(acc, a + 4 * L);
        c11.intoArray(acc, a + 5 * L);
        c12.intoArray(acc, a + 6 * L);
        c13.intoArray(acc, a + 7 * L);
    }

    /** Columns [k0, k1) of x row r against the four weight rows. */
    private static void tile4x1(float[] w, float[] x, int r, int n, int k0, int k1, float[] acc) {
        int a = 4 * L * r;
        FloatVector c0 = FloatVector.fromArray(F, acc, a);
        FloatVector c1 = FloatVector.fromArray(F, acc, a + L);
        FloatVector c2 = FloatVector.fromArray(F, acc, a + 2 * L);
        FloatVector c3 = FloatVector.fromArray(F, acc, a + 3 * L);
        int x0 = r * n;
        for (int i = k0; i < k1; i += L) {
            FloatVector v = FloatVector.fromArray(F, x, x0 + i);
            c0 = FloatVector.fromArray(F, w, i).fma(v, c0);
            c1 = FloatVector.fromArray(F, w, n + i).fma(v, c1);
            c2 = FloatVector.fromArray(F, w, 2 * n + i).fma(v, c2);
            c3 = FloatVector.fromArray(F, w, 3 * n + i).fma(v, c3);
        }
        c0.intoArray(acc, a);
        c1.intoArray(acc, a + L);
        c2.intoArray(acc, a + 2 * L);
        c3.intoArray(acc, a + 3 * L);
    }
}
