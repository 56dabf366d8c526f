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
            for (DType dtype : DType.values()) {
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
        // batch invariance: the batched matmul decodes a row then calls dot; decode calls dotRow
        try (Arena arena = Arena.ofConfined()) {
            for (DType dtype : DType.values()) {
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
    @ValueSource(ints = {1, 7, 31, 33, 127, 4097})
    void fourRowDotIsBitIdenticalToSingleDotsAndCloseToScalar(int n) {
        float[] w = random(4 * n + 3, n, 1f);
        float[] x = random(n + 1, 2 * n, 1f);
        float[] v = new float[4];
        float[] s = new float[4];
        VEC.dot4(w, 3, n, x, 1, n, v);
        SCA.dot4(w, 3, n, x, 1, n, s);
        for (int q = 0; q < 4; q++) {
            assertEquals(Float.floatToIntBits(VEC.dot(w, 3 + q * n, x, 1, n)), Float.floatToIntBits(v[q]), "row " + q);
            assertEquals(s[q], v[q], tol(n, 1f));
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
