package io.tqserve.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.tqserve.backend.DType;
import io.tqserve.backend.Matrix;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The multi-row kernels on the packed bf16 copy ({@link PackedGemm}): every output has the bits the one-row decode
 * kernel gives its activation row alone (batch invariance), on both paths (direct packed tiles, widened rows with
 * float tiles), and stays within float reordering error of the scalar twin.
 */
class PackedGemmTest {
    static final int L = VectorKernels.L;

    /** steps: L-column steps per row (odd counts leave pack4's column-order tail). */
    @ParameterizedTest
    @CsvSource({"1, 1", "1, 2", "2, 3", "3, 4", "3, 5", "16, 7", "5, 16", "4, 17", "2, 33"})
    void everyTileAndPathGivesTheBitsOfTheOneRowKernel(int steps, int rows) {
        int n = steps * L;
        try (Arena arena = Arena.ofConfined()) {
            Matrix w = KernelParityTest.matrix(arena, DType.BF16, 8, n, 7L * n + rows);
            MemorySegment pack = arena.allocate(w.data().byteSize(), 64);
            VectorMatmul.pack4(w.data(), 0, pack, 0, n);
            VectorMatmul.pack4(w.data(), 8L * n, pack, 8L * n, n);
            float[] x = KernelParityTest.random(3 + rows * n, 5L * rows + n, 1f);
            float[] wide = new float[4 * n];
            for (int g = 0; g < 2; g++) {
                long base = 8L * n * g;
                // reference: the decode kernel, one activation row at a time
                float[] ref = new float[rows * 4];
                for (int r = 0; r < rows; r++) {
                    VectorMatmul.matvec4Packed(pack, base, n, x, 3 + r * n, ref, 4 * r);
                }
                float[] direct = new float[rows * 4];
                float[] widened = new float[rows * 4];
                PackedGemm.group(pack, base, n, x, 3, rows, direct, 0, 4);
                PackedGemm.unpack4(pack, base, n, wide, 0);
                for (int r = 0; r < rows; r += 4) {
                    KernelParityTest.VEC.tile(wide, 0, 4, x, 3 + r * n, Math.min(4, rows - r), n, widened, 4 * r, 4);
                }
                float[] twin = new float[rows * 4];
                float[] rowsOfW = new float[4 * n];
                for (int q = 0; q < 4; q++) {
                    KernelParityTest.SCA.decodeRow(w, 4 * g + q, rowsOfW, q * n);
                }
                assertEquals(java.util.Arrays.toString(rowsOfW), java.util.Arrays.toString(wide),
                        "unpack4 restores the rows' floats exactly");
                for (int r = 0; r < rows; r++) {
                    KernelParityTest.SCA.tile(rowsOfW, 0, 4, x, 3 + r * n, 1, n, twin, 4 * r, 0);
                }
                for (int i = 0; i < ref.length; i++) {
                    String at = "group " + g + " row " + i / 4 + " out " + i % 4;
                    assertEquals(Float.floatToIntBits(ref[i]), Float.floatToIntBits(direct[i]), "group(): " + at);
                    assertEquals(Float.floatToIntBits(ref[i]), Float.floatToIntBits(widened[i]), "widened: " + at);
                    assertEquals(twin[i], ref[i], KernelParityTest.tol(n, 2f), "scalar twin: " + at);
                }
                if (rows >= 4) { // the 4x4, 4x2 and 2x4 packed tiles on their own, whichever group() picks here
                    float[] t4 = new float[16];
                    float[] t2 = new float[8];
                    PackedGemm.tile4x4Packed(pack, base, n, x, 3, t4, 0, 4);
                    PackedGemm.tile4x2Packed(pack, base, n, x, 3 + 2 * n, t2, 0, 4);
                    for (int i = 0; i < 16; i++) {
                        assertEquals(Float.floatToIntBits(ref[i]), Float.floatToIntBits(t4[i]), "4x4 tile " + i);
                    }
                    for (int i = 0; i < 8; i++) {
                        assertEquals(Float.floatToIntBits(ref[8 + i]), Float.floatToIntBits(t2[i]), "4x2 tile " + i);
                    }
                    float[] t24 = new float[16];
                    PackedGemm.tile2x4Packed(pack, base, 0, n, x, 3, t24, 0, 4);
                    PackedGemm.tile2x4Packed(pack, base, 2, n, x, 3, t24, 0, 4);
                    for (int i = 0; i < 16; i++) {
                        assertEquals(Float.floatToIntBits(ref[i]), Float.floatToIntBits(t24[i]), "2x4 tiles " + i);
                    }
                }
            }
        }
    }

    /**
     * Through the backend: a batch of rows on the prepared (packed) matrices gives each row the bits it gets alone,
     * across the direct/widened threshold and the activation row blocks ({@link CpuBackend#GEMM_ROW_BLOCK}).
     */
    @ParameterizedTest
    @ValueSource(ints = {2, 5, 16, 17, 33, 70})
    void preparedBackendGivesEveryRowOfABatchItsBitsAlone(int rows) {
        int n = 5 * L;
        try (Arena arena = Arena.ofShared(); CpuBackend fast = new CpuBackend(new VectorKernels(), 2, "repacked")) {
            Matrix w = KernelParityTest.matrix(arena, DType.BF16, 48, n, 3L * rows);
            fast.prepare(List.of(w));
            assertEquals(true, fast.repacked(w));
            float[] x = KernelParityTest.random(rows * n, rows, 1f);
            float[] batched = new float[rows * 48];
            fast.matmul(w, x, rows, batched);
            for (int r = 0; r < rows; r++) {
                float[] alone = new float[48];
                fast.matmul(w, java.util.Arrays.copyOfRange(x, r * n, (r + 1) * n), 1, alone);
                for (int j = 0; j < 48; j++) {
                    assertEquals(Float.floatToIntBits(alone[j]), Float.floatToIntBits(batched[r * 48 + j]),
                            "row " + r + " out " + j);
                }
            }
        }
    }
}
