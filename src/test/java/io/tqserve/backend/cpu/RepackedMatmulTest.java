package io.tqserve.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.tqserve.backend.DType;
import io.tqserve.backend.Matrix;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The decode kernel on rows repacked at load ({@link CpuBackend#prepare}, {@link VectorMatmul#matvec4Packed}) and the
 * fused q/k/v and gate/up pass ({@link CpuBackend#matmuls}): the same bits as the plain kernels, close to the scalar
 * twin.
 */
class RepackedMatmulTest {
    static final int L = VectorKernels.L;

    private static void assertBits(float[] want, float[] got, String what) {
        assertEquals(want.length, got.length);
        for (int i = 0; i < want.length; i++) {
            assertEquals(Float.floatToIntBits(want[i]), Float.floatToIntBits(got[i]), what + " [" + i + "]");
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 64})
    void packedRowsGiveTheBitsOfTheMappedRowsAndStayCloseToScalar(int steps) {
        int n = steps * L;
        try (Arena arena = Arena.ofConfined()) {
            Matrix w = KernelParityTest.matrix(arena, DType.BF16, 8, n, 31L * n);
            MemorySegment packed = arena.allocate(w.data().byteSize(), 64);
            VectorMatmul.pack4(w.data(), 0, packed, 0, n);
            VectorMatmul.pack4(w.data(), 8L * n, packed, 8L * n, n);
            float[] x = KernelParityTest.random(n + 3, n, 1f);
            for (int g = 0; g < 2; g++) {
                float[] plain = new float[4];
                float[] fromPack = new float[4];
                float[] scalar = new float[4];
                VectorMatmul.matvec4Bf16(w.data(), 8L * n * g, n, x, 3, plain, 0);
                VectorMatmul.matvec4Packed(packed, 8L * n * g, n, x, 3, fromPack, 0);
                KernelParityTest.SCA.matvec(w, 4 * g, 4, x, 3, scalar, 0);
                assertBits(plain, fromPack, "group " + g);
                for (int q = 0; q < 4; q++) {
                    assertEquals(scalar[q], fromPack[q], KernelParityTest.tol(n, 2f), "scalar twin, row " + q);
                }
            }
        }
    }

    /**
     * Quantized matrices repacked at load ({@link QuantizedPack}): for every batch size the same bits as the
     * kernels on the stored layout (the pack changes where the bytes are, not the arithmetic), alone and fused with
     * dense and other quantized matrices in one pass; a matrix whose rows do not come in fours stays unpacked. Three
     * groups per row leave the loops a partial step.
     */
    @ParameterizedTest
    @org.junit.jupiter.params.provider.CsvSource({"4, 64, BF16, 4", "4, 128, F16, 4", "8, 64, BF16, 4", "8, 32, F32, 4",
        "4, 64, BF16, 3", "8, 64, BF16, 3", "4, 32, BF16, 4", "4, 32, F16, 2"})
    void packedQuantizedRowsGiveTheBitsOfTheStoredLayout(int bits, int groupSize, DType scaleType, int groups) {
        for (QuantActivations a : QuantActivations.values()) {
            packedQuantizedRowsGiveTheBitsOfTheStoredLayout(bits, groupSize, scaleType, groups, a);
        }
    }

    /**
     * The same with the float and with {@link QuantizedInt8}'s integer kernels (whose int8 pack holds centred 8-bit
     * codes).
     */
    private static void packedQuantizedRowsGiveTheBitsOfTheStoredLayout(int bits, int groupSize, DType scaleType,
            int groups, QuantActivations int8) {
        int dim = groups * Math.max(groupSize, QuantizedVector.block(bits));
        try (Arena arena = Arena.ofShared(); CpuBackend plain = new CpuBackend(new VectorKernels(), 2, "plain", int8);
                CpuBackend fast = new CpuBackend(new VectorKernels(), 2, "repacked", int8)) {
            Matrix q = QuantizedKernelParityTest.quantized(arena, 64, dim, bits, groupSize, scaleType, 11);
            Matrix k = QuantizedKernelParityTest.quantized(arena, 32, dim, bits, groupSize, scaleType, 12);
            Matrix other = QuantizedKernelParityTest.quantized(arena, 16, dim, bits == 4 ? 8 : 4, 64, DType.BF16, 13);
            Matrix odd = QuantizedKernelParityTest.quantized(arena, 37, dim, bits, groupSize, scaleType, 14);
            Matrix dense = KernelParityTest.matrix(arena, DType.BF16, 24, dim, 15);
            fast.prepare(List.of(q, k, other, odd, dense));
            assertEquals(QuantizedVector.WIDE, fast.repacked(q), "4- and 8-bit rows in fours are repacked");
            assertEquals(false, fast.repacked(odd), "37 rows are not");
            assertFusedAndPreparedGiveTheBitsOfPlain(plain, fast, new Matrix[] {q, dense, k, other, odd}, dim,
                    new int[] {1, 3, 6, 9});
        }
    }

    @Test
    void preparedAndFusedMatmulsGiveTheBitsOfLoneMatmulsOnTheMappedLayout() {
        int dim = 16 * L + 0;
        try (Arena arena = Arena.ofShared(); CpuBackend plain = new CpuBackend(new VectorKernels(), 2, "plain");
                CpuBackend fast = new CpuBackend(new VectorKernels(), 2, "repacked")) {
            Matrix q = KernelParityTest.matrix(arena, DType.BF16, 64, dim, 1);
            Matrix k = KernelParityTest.matrix(arena, DType.BF16, 32, dim, 2);
            Matrix odd = KernelParityTest.matrix(arena, DType.BF16, 37, dim, 3); // rows not in fours: not repacked
            Matrix f32 = KernelParityTest.matrix(arena, DType.F32, 12, dim, 4);
            fast.prepare(List.of(q, k, odd, f32));
            assertFusedAndPreparedGiveTheBitsOfPlain(plain, fast, new Matrix[] {q, k, odd, f32}, dim,
                    new int[] {1, 3, 16});
        }
    }

    /**
     * For each batch size: every matrix's outputs from one fused {@code matmuls} call and from a lone {@code matmul} on
     * the prepared backend {@code fast} are the bits of a lone {@code matmul} on the unprepared backend {@code plain}.
     */
    private static void assertFusedAndPreparedGiveTheBitsOfPlain(CpuBackend plain, CpuBackend fast, Matrix[] ws,
            int dim, int[] batches) {
        for (int rows : batches) {
            float[] x = KernelParityTest.random(rows * dim, 100 + rows, 1f);
            float[][] lone = new float[ws.length][];
            float[][] fused = new float[ws.length][];
            for (int i = 0; i < ws.length; i++) {
                lone[i] = new float[rows * ws[i].rows()];
                fused[i] = new float[rows * ws[i].rows()];
                plain.matmul(ws[i], x, rows, lone[i]);
            }
            fast.matmuls(ws, x, rows, fused);
            for (int i = 0; i < ws.length; i++) {
                assertBits(lone[i], fused[i], rows + " rows, fused, matrix " + i);
                float[] single = new float[rows * ws[i].rows()];
                fast.matmul(ws[i], x, rows, single);
                assertBits(lone[i], single, rows + " rows, lone matmul on the prepared backend, matrix " + i);
            }
        }
    }

    /**
     * {@link CpuBackend#matvecBlockTime}: a one-row matmul on a repacked matrix adds exactly its weight bytes (every
     * block of rows streams its rows once) and some time; a batch (the multi-row kernels) and an unpacked matrix add
     * nothing.
     */
    @Test
    void matvecBlockTimeCountsTheOneRowKernelsBytes() {
        int dim = 8 * L;
        try (Arena arena = Arena.ofShared(); CpuBackend b = new CpuBackend(new VectorKernels(), 2, "repacked")) {
            Matrix w = KernelParityTest.matrix(arena, DType.BF16, 64, dim, 31);
            Matrix odd = KernelParityTest.matrix(arena, DType.BF16, 37, dim, 32);
            b.prepare(List.of(w, odd));
            CpuBackend.KernelTime start = b.matvecBlockTime();
            b.matmul(w, KernelParityTest.random(dim, 1, 1f), 1, new float[64]);
            CpuBackend.KernelTime one = b.matvecBlockTime().since(start);
            assertEquals(w.byteSize(), one.bytes());
            org.junit.jupiter.api.Assertions.assertTrue(one.threadNanos() > 0);
            b.matmul(w, KernelParityTest.random(3 * dim, 2, 1f), 3, new float[3 * 64]);
            b.matmul(odd, KernelParityTest.random(dim, 3, 1f), 1, new float[37]);
            assertEquals(w.byteSize(), b.matvecBlockTime().since(start).bytes());
        }
    }
}
