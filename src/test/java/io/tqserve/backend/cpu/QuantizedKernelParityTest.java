package io.tqserve.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.DType;
import io.tqserve.backend.GroupQuant;
import io.tqserve.backend.Layouts;
import io.tqserve.backend.Matrix;
import io.tqserve.model.quantize.AffineQuantizer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The quantized matmul ({@link QuantizedMatmul}): Vector API kernels against the scalar twin and a plain
 * dequantize-then-dot reference, for every code width, group size and scale dtype; and batch invariance: a row's
 * outputs are the same bits alone (matrix-vector, dequantized in registers) as in a batch (decoded rows, tiles).
 */
class QuantizedKernelParityTest {
    static CpuBackend vector;
    static CpuBackend int8;
    static CpuBackend wide;
    static CpuBackend scalar;
    static Arena arena;

    @BeforeAll
    static void start() {
        vector = new CpuBackend(new VectorKernels(), 2, "test", QuantActivations.FLOAT);
        int8 = new CpuBackend(new VectorKernels(), 2, "test", QuantActivations.INT8);
        wide = new CpuBackend(new VectorKernels(), 2, "test", QuantActivations.AUTO);
        scalar = new CpuBackend(new ScalarKernels(), 2, "test");
        arena = Arena.ofShared();
    }

    @AfterAll
    static void stop() {
        vector.close();
        int8.close();
        wide.close();
        scalar.close();
        arena.close();
    }

    /** A rows x cols matrix of random weights quantized as MLX does. */
    static Matrix quantized(int rows, int cols, int bits, int groupSize, DType scaleType, long seed) {
        return quantized(arena, rows, cols, bits, groupSize, scaleType, seed);
    }

    /** As {@link #quantized(int, int, int, int, DType, long)}, in the given arena. */
    static Matrix quantized(Arena arena, int rows, int cols, int bits, int groupSize, DType scaleType, long seed) {
        float[] w = KernelParityTest.random(rows * cols, seed, 0.5f);
        int groups = cols / groupSize;
        byte[] packed = new byte[rows * cols * bits / 8];
        float[] s = new float[rows * groups];
        float[] b = new float[rows * groups];
        for (int r = 0; r < rows; r++) {
            AffineQuantizer.quantizeRow(w, r * cols, cols, bits, groupSize, packed, r * cols * bits / 8, s, b,
                    r * groups);
        }
        MemorySegment data = arena.allocate(packed.length).copyFrom(MemorySegment.ofArray(packed));
        MemorySegment scales = arena.allocate((long) s.length * scaleType.bytes());
        MemorySegment biases = arena.allocate((long) s.length * scaleType.bytes());
        for (int i = 0; i < s.length; i++) {
            put(scales, scaleType, i, s[i]);
            put(biases, scaleType, i, b[i]);
        }
        return new Matrix(data, DType.U32, rows, cols, new GroupQuant(bits, groupSize, scales, biases, scaleType));
    }

    static void put(MemorySegment seg, DType t, int i, float v) {
        switch (t) {
            case BF16 -> seg.setAtIndex(Layouts.SHORT_LE, i, AffineQuantizer.toBf16(v));
            case F16 -> seg.setAtIndex(Layouts.SHORT_LE, i, Float.floatToFloat16(v));
            default -> seg.setAtIndex(Layouts.FLOAT_LE, i, v);
        }
    }

    /**
     * mlx-community's formats (4 and 8 bits, groups of 32, 64 and 128) run the vector kernels at every vector width
     * the JVM offers (128, 256 or 512 bits): with the preferred species on an AVX-512 machine a 4-bit block was 128
     * columns, groups of 64 fell to the scalar path and 4-bit decode ran at a twelfth of bf16's speed; at 256 bits
     * 4-bit groups of 32 fill half a block ({@link QuantizedVector#span2}).
     */
    @Test
    void mlxCommunityFormatsRunTheVectorKernels() {
        assertTrue(QuantizedVector.WIDE, "vectors of " + QuantizedVector.F.vectorBitSize() + " bits");
        for (int bits : new int[] {4, 8}) {
            for (int groupSize : new int[] {32, 64, 128}) {
                Matrix w = quantized(4, 2 * groupSize, bits, groupSize, DType.BF16, 7);
                assertTrue(QuantizedVector.handles(w), bits + "-bit, groups of " + groupSize);
                assertTrue(new QuantizedMatmul(new VectorKernels(), QuantActivations.FLOAT).fast(w), bits + "-bit, groups of " + groupSize);
            }
        }
    }

    /**
     * bits, group size, scale dtype, rows, groups per row. Three groups per row leave the vector loops a partial step
     * (4-bit groups of 64: an odd block; 8-bit groups of 32 and 64: 3 and 6 blocks against steps of 4).
     */
    static Stream<Arguments> shapes() {
        return Stream.of(Arguments.of(4, 64, DType.BF16, 37, 4), Arguments.of(4, 32, DType.F16, 64, 4),
                Arguments.of(4, 128, DType.F32, 9, 4), Arguments.of(8, 64, DType.BF16, 37, 4),
                Arguments.of(8, 32, DType.F32, 12, 4), Arguments.of(2, 64, DType.BF16, 21, 4),
                Arguments.of(3, 32, DType.BF16, 13, 4), Arguments.of(5, 64, DType.F16, 10, 4),
                Arguments.of(6, 128, DType.BF16, 7, 4), Arguments.of(4, 64, DType.BF16, 12, 3),
                Arguments.of(8, 32, DType.BF16, 12, 3), Arguments.of(8, 64, DType.F16, 9, 3),
                Arguments.of(4, 128, DType.BF16, 8, 5));
    }

    @ParameterizedTest
    @MethodSource("shapes")
    void vectorMatchesScalarAndReference(int bits, int groupSize, DType scaleType, int rows, int groups) {
        int cols = groups * groupSize;
        Matrix w = quantized(rows, cols, bits, groupSize, scaleType, bits * 1000L + rows);
        int batch = 6;
        float[] x = KernelParityTest.random(batch * cols, rows, 1f);
        float[] v = new float[batch * rows];
        float[] s = new float[batch * rows];
        float[] i8 = new float[batch * rows];
        float[] wi = new float[batch * rows];
        vector.matmul(w, x, batch, v);
        int8.matmul(w, x, batch, i8);
        wide.matmul(w, x, batch, wi);
        scalar.matmul(w, x, batch, s);
        for (int r = 0; r < batch; r++) {
            for (int o = 0; o < rows; o++) {
                double ref = 0;
                float m = 0;
                for (int c = 0; c < cols; c++) {
                    float wv = w.get(o, c);
                    ref += (double) wv * x[r * cols + c];
                    m = Math.max(m, Math.abs(wv));
                }
                float tol = KernelParityTest.tol(cols, m);
                assertEquals(ref, s[r * rows + o], tol, "scalar row " + r + " out " + o);
                assertEquals(ref, v[r * rows + o], tol, "vector row " + r + " out " + o);
            }
            if (QuantizedInt8.supported(bits, groupSize)) {
                float[] xr = java.util.Arrays.copyOfRange(x, r * cols, (r + 1) * cols);
                int8AgreesWithTwinAndDense(w, 127, xr, java.util.Arrays.copyOfRange(i8, r * rows, (r + 1) * rows),
                        "int8, row " + r);
                if (bits == 4) {
                    int8AgreesWithTwinAndDense(w, QuantizedWide4.RANGE, xr,
                            java.util.Arrays.copyOfRange(wi, r * rows, (r + 1) * rows), "wide, row " + r);
                } else {
                    for (int o = 0; o < rows; o++) { // 8-bit weights keep the float kernels by default
                        assertEquals(Float.floatToIntBits(v[r * rows + o]), Float.floatToIntBits(wi[r * rows + o]));
                    }
                }
            }
        }
    }

    /**
     * The integer-activation kernels ({@link QuantizedInt8}, activations quantized to {@code |xq| <= range}): each
     * output within float32 rounding (1e-5 of the sum of its terms' moduli) of the scalar twin, and within the bound
     * activation rounding allows of the dequantized product: {@code Σ_blocks d/2 · Σ |s·(q - z)|} (the tolerance
     * NumPy's reference fixes in QuantizedInt8Test).
     */
    static void int8AgreesWithTwinAndDense(Matrix w, int range, float[] x, float[] v, String what) {
        GroupQuant q = w.quant();
        int bits = q.bits();
        int cols = w.cols();
        int groups = cols / q.groupSize();
        int blk = QuantizedInt8.block(bits);
        short[] xq = new short[cols];
        float[] d = new float[cols / blk];
        QuantizedInt8.quantize(bits, range, x, 0, cols, xq, 0, d, 0);
        float[] xsum = new float[groups];
        QuantizedVector.groupSums(x, 0, cols, q.groupSize(), xsum, 0);
        float[] row = new float[cols];
        int z = (int) QuantizedInt8.zero(bits);
        for (int o = 0; o < w.rows(); o++) {
            QuantizedScalar.decodeRow(w, o, row, 0);
            double dense = 0;
            double bound = 0;
            double mag = 0;
            for (int c = 0; c < cols; c++) {
                float s = q.scale(o, c / q.groupSize(), groups);
                float b = q.bias(o, c / q.groupSize(), groups);
                long code = Math.round((row[c] - (double) b) / s);
                dense += (double) row[c] * x[c];
                bound += Math.abs(s * (double) (code - z)) * d[c / blk] / 2;
                mag += Math.abs(s * (double) d[c / blk] * (code - z) * range);
            }
            for (int g = 0; g < groups; g++) {
                mag += Math.abs((q.bias(o, g, groups) + z * (double) q.scale(o, g, groups)) * xsum[g]);
            }
            float twin = QuantizedInt8.dot(w, o, xq, 0, d, 0, xsum, 0);
            assertEquals(twin, v[o], 1e-5 * mag + 1e-7, what + " out " + o + ": vector against its scalar twin");
            assertTrue(Math.abs(v[o] - dense) <= bound * 1.001 + 1e-5 * mag,
                    what + " out " + o + ": " + v[o] + " against the dense " + dense + ", beyond the bound " + bound);
        }
    }

    @ParameterizedTest
    @MethodSource("shapes")
    void batchingChangesNoBit(int bits, int groupSize, DType scaleType, int rows, int groups) {
        int cols = groups * groupSize;
        Matrix w = quantized(rows, cols, bits, groupSize, scaleType, bits * 77L + rows);
        for (CpuBackend backend : new CpuBackend[] {vector, int8, wide, scalar}) {
            int batch = 5;
            float[] x = KernelParityTest.random(batch * cols, rows + 1, 1f);
            float[] all = new float[batch * rows];
            backend.matmul(w, x, batch, all);
            for (int r = 0; r < batch; r++) {
                float[] one = new float[rows];
                backend.matmul(w, java.util.Arrays.copyOfRange(x, r * cols, (r + 1) * cols), 1, one);
                for (int o = 0; o < rows; o++) {
                    assertEquals(Float.floatToIntBits(one[o]), Float.floatToIntBits(all[r * rows + o]),
                            backend.kernels().name() + " row " + r + " out " + o);
                }
            }
        }
    }
}
