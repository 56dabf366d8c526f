package io.tqserve.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.DType;
import io.tqserve.backend.Kernels;
import io.tqserve.backend.Matrix;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Vector kernels against their scalar twins over awkward sizes and extreme values. */
class KernelParityTest {
    static final Kernels VEC = new VectorKernels();
    static final Kernels SCA = new ScalarKernels();
    /** The dense dtypes (U32 matrices are quantized: QuantizedKernelParityTest). */
    static final DType[] FLOAT_TYPES = {DType.BF16, DType.F16, DType.F32};

    static float[] random(int n, long seed, float scale) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = (float) ((r.nextDouble() * 2 - 1) * scale);
        }
        return x;
    }

    /** Tolerance for a sum of n products of magnitude ≤ m: float32 reordering error grows with n. */
    static float tol(int n, float m) {
        return 1e-6f * n * m + 1e-6f;
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 7, 8, 31, 33, 64, 127, 4097})
    void dotMatchesScalar(int n) {
        float[] a = random(n + 3, n, 1f);
        float[] b = random(n + 5, n * 31L, 1f);
        assertEquals(SCA.dot(a, 3, b, 5, n), VEC.dot(a, 3, b, 5, n), tol(n, 1f));
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 7, 31, 33, 127, 4097})
    void dotHandlesExtremeMagnitudes(int n) {
        float[] a = random(n, 3, 1e18f);
        float[] b = random(n, 4, 1e18f);
        float s = SCA.dot(a, 0, b, 0, n);
        float v = VEC.dot(a, 0, b, 0, n);
        assertTrue(Float.isFinite(s) == Float.isFinite(v), s + " vs " + v);
        float[] big = new float[n];
        java.util.Arrays.fill(big, Float.MAX_VALUE);
        assertEquals(Float.POSITIVE_INFINITY, VEC.dot(big, 0, big, 0, n));
        assertEquals(Float.POSITIVE_INFINITY, SCA.dot(big, 0, big, 0, n));
        float[] tiny = new float[n];
        java.util.Arrays.fill(tiny, Float.MIN_VALUE);
        assertEquals(SCA.dot(tiny, 0, tiny, 0, n), VEC.dot(tiny, 0, tiny, 0, n));
    }

    static Matrix matrix(Arena arena, DType dtype, int rows, int cols, long seed) {
        float[] v = random(rows * cols, seed, 2f);
        MemorySegment seg = arena.allocate((long) rows * cols * dtype.bytes(), 8);
        for (int i = 0; i < v.length; i++) {
            switch (dtype) {
                case BF16 -> seg.setAtIndex(io.tqserve.backend.Layouts.SHORT_LE, i,
                        (short) (Float.floatToRawIntBits(v[i]) >>> 16));
                case F16 -> seg.setAtIndex(io.tqserve.backend.Layouts.SHORT_LE, i, Float.floatToFloat16(v[i]));
                case F32 -> seg.setAtIndex(io.tqserve.backend.Layouts.FLOAT_LE, i, v[i]);
            }
        }
        return new Matrix(seg, dtype, rows, cols);
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 7, 31, 33, 127, 4097})
    void matrixRowKernelsMatchScalarForEveryDtype(int cols) {
        try (Arena arena = Arena.ofConfined()) {
            for (DType dtype : FLOAT_TYPES) {
                Matrix w = matrix(arena, dtype, 3, cols, cols + dtype.ordinal());
                float[] x = random(cols + 2, 99, 1f);
                for (int r = 0; r < 3; r++) {
                    assertEquals(SCA.dotRow(w, r, x, 2), VEC.dotRow(w, r, x, 2), tol(cols, 2f), dtype + " row " + r);
                    float[] a = new float[cols + 1];
                    float[] b = new float[cols + 1];
                    SCA.decodeRow(w, r, a, 1);
                    VEC.decodeRow(w, r, b, 1);
                    assertEquals(java.util.Arrays.toString(a), java.util.Arrays.toString(b), "decodeRow is exact");
                    float[] ya = random(cols, 5, 1f);
                    float[] yb = ya.clone();
                    SCA.axpyRow(0.37f, w, r, ya, 0);
                    VEC.axpyRow(0.37f, w, r, yb, 0);
                    for (int i = 0; i < cols; i++) {
                        assertEquals(ya[i], yb[i], 1e-5f);
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 7, 31, 33, 127, 4097})
    void decodedRowDotEqualsDirectRowDotBitForBit(int cols) {
        // a row read straight from its bytes (dotRow) and the same row decoded then dotted give the same bits
        try (Arena arena = Arena.ofConfined()) {
            for (DType dtype : FLOAT_TYPES) {
                Matrix w = matrix(arena, dtype, 2, cols, 7 * cols);
                float[] x = random(cols, 8, 1f);
                float[] row = new float[cols];
                VEC.decodeRow(w, 1, row, 0);
                assertEquals(Float.floatToIntBits(VEC.dotRow(w, 1, x, 0)),
                        Float.floatToIntBits(VEC.dot(row, 0, x, 0, cols)), dtype.toString());
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 7, 31, 33, 127, 512, 4097})
    void matmulKernelsGiveEveryOutputTheSameBitsWhicheverComputesItAndAreCloseToScalar(int n) {
        // batch invariance: decode uses matvec (four bf16 rows, or decoded rows for the rest); prefill and batched
        // decode use 4x4 and smaller tiles of decoded rows. Reference: tile of one weight row times one x row.
        try (Arena arena = Arena.ofConfined()) {
            for (DType dtype : FLOAT_TYPES) {
                Matrix m = matrix(arena, dtype, 5, n, 3 * n + dtype.ordinal());
                float[] w = new float[5 * n + 3];
                for (int q = 0; q < 5; q++) {
                    VEC.decodeRow(m, q, w, 3 + q * n);
                }
                float[] x = random(4 * n + 1, 2 * n, 1f);
                float[][] ref = new float[4][5];
                float[] one = new float[1];
                for (int r = 0; r < 4; r++) {
                    for (int q = 0; q < 5; q++) {
                        VEC.tile(w, 3 + q * n, 1, x, 1 + r * n, 1, n, one, 0, 0);
                        ref[r][q] = one[0];
                        assertEquals(SCA.dot(w, 3 + q * n, x, 1 + r * n, n), one[0], tol(n, 1f), dtype + " scalar");
                    }
                }
                for (int count = 1; count <= 4; count++) {
                    for (int start = 0; start + count <= 5; start++) {
                        for (int r = 0; r < 4; r++) {
                            float[] mv = new float[count];
                            VEC.matvec(m, start, count, x, 1 + r * n, mv, 0);
                            for (int q = 0; q < count; q++) {
                                assertEquals(Float.floatToIntBits(ref[r][start + q]), Float.floatToIntBits(mv[q]),
                                        dtype + " matvec rows " + start + "+" + count + " x row " + r);
                            }
                        }
                        for (int xCount = 1; xCount <= 4; xCount++) {
                            float[] t = new float[xCount * 7];
                            VEC.tile(w, 3 + start * n, count, x, 1, xCount, n, t, 0, 7);
                            for (int r = 0; r < xCount; r++) {
                                for (int q = 0; q < count; q++) {
                                    assertEquals(Float.floatToIntBits(ref[r][start + q]),
                                            Float.floatToIntBits(t[r * 7 + q]), dtype + " tile " + count + "x" + xCount
                                                    + " at w row " + (start + q) + " x row " + r);
                                }
                            }
                        }
                    }
                }
                float[] sca = new float[4];
                SCA.matvec(m, 1, 4, x, 1, sca, 0);
                float[] st = new float[4];
                SCA.tile(w, 3 + n, 4, x, 1, 1, n, st, 0, 0);
                for (int q = 0; q < 4; q++) {
                    assertEquals(sca[q], ref[0][1 + q], tol(n, 2f), dtype + " scalar matvec");
                    assertEquals(st[q], ref[0][1 + q], tol(n, 2f), dtype + " scalar tile");
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 3, 5, 64})
    void batchedMatmulGivesEveryRowTheNumbersItGetsAlone(int rows) {
        try (Arena arena = Arena.ofShared(); CpuBackend backend = CpuBackend.create(2)) {
            Matrix w = matrix(arena, DType.BF16, 37, 129, 77);
            float[] x = random(rows * 129, 78, 1f);
            float[] batched = new float[rows * 37];
            backend.matmul(w, x, rows, batched);
            for (int r = 0; r < rows; r++) {
                float[] alone = new float[37];
                backend.matmul(w, java.util.Arrays.copyOfRange(x, r * 129, (r + 1) * 129), 1, alone);
                for (int j = 0; j < 37; j++) {
                    assertEquals(Float.floatToIntBits(alone[j]), Float.floatToIntBits(batched[r * 37 + j]),
                            "row " + r + " col " + j);
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 7, 31, 33, 127, 4097})
    void elementwiseKernelsMatchScalar(int n) {
        float[] x = random(n, 11, 3f);
        float[] w = random(n, 12, 1f);
        float[] a = new float[n];
        float[] b = new float[n];
        SCA.rmsnorm(a, 0, x, 0, w, n, 1e-5f);
        VEC.rmsnorm(b, 0, x, 0, w, n, 1e-5f);
        for (int i = 0; i < n; i++) {
            assertEquals(a[i], b[i], 1e-5f * Math.max(1f, Math.abs(a[i])));
        }
        float[] s1 = random(n, 13, 50f);
        float[] s2 = s1.clone();
        SCA.softmax(s1, 0, n);
        VEC.softmax(s2, 0, n);
        for (int i = 0; i < n; i++) {
            assertEquals(s1[i], s2[i], 1e-6f);
        }
        float[] y1 = random(n, 14, 1f);
        float[] y2 = y1.clone();
        SCA.axpy(-1.5f, x, 0, y1, 0, n);
        VEC.axpy(-1.5f, x, 0, y2, 0, n);
        SCA.add(y1, 0, x, 0, n);
        VEC.add(y2, 0, x, 0, n);
        SCA.scale(y1, 0, n, 0.25f);
        VEC.scale(y2, 0, n, 0.25f);
        for (int i = 0; i < n; i++) {
            assertEquals(y1[i], y2[i], 1e-6f);
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 7, 33, 4097})
    void softmaxOfExtremeLogitsStaysFinite(int n) {
        float[] x = random(n, 21, 1f);
        x[0] = 1e30f;
        if (n > 1) {
            x[n - 1] = -1e30f;
        }
        VEC.softmax(x, 0, n);
        assertEquals(1f, x[0], 1e-6f);
        for (float v : x) {
            assertTrue(Float.isFinite(v));
        }
    }

    @org.junit.jupiter.api.Test
    void physicalCoresCountsDistinctCoreIds() {
        var lines = java.util.List.of("processor : 0", "physical id : 0", "core id : 0", "processor : 1",
                "physical id : 0", "core id : 0", "processor : 2", "physical id : 0", "core id : 1");
        assertEquals(2, PhysicalCores.parse(lines));
    }
}
