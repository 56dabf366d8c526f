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
 * The multi-row kernels on the packed bf16 copy ({@link PackedGemm}, {@link PackedTiles}): every output has the bits
 * the one-row decode kernel gives its activation row alone (batch invariance), for every tile (one group or two at
 * once) and column block size,
 * and stays within float reordering error of the scalar twin.
 */
class PackedGemmTest {
    static final int L = VectorKernels.L;

    /** steps: L-column steps per row (odd counts leave pack4's column-order tail). */
    @ParameterizedTest
    @CsvSource({"1, 1", "1, 2", "2, 3", "3, 4", "3, 5", "16, 7", "5, 16", "4, 17", "2, 33", "9, 6"})
    void everyTileAndBlockSizeGivesTheBitsOfTheOneRowKernel(int steps, int rows) {
        int n = steps * L;
        int pairs = n / (2 * L);
        try (Arena arena = Arena.ofConfined()) {
            Matrix w = KernelParityTest.matrix(arena, DType.BF16, 8, n, 7L * n + rows);
            MemorySegment pack = arena.allocate(w.data().byteSize(), 64);
            VectorMatmul.pack4(w.data(), 0, pack, 0, n);
            VectorMatmul.pack4(w.data(), 8L * n, pack, 8L * n, n);
            float[] x = KernelParityTest.random(3 + rows * n, 5L * rows + n, 1f);
            // both groups at once (the 8x2 tiles of 512-bit machines; any machine runs them here)
            float[] ref8 = new float[rows * 8];
            for (int r = 0; r < rows; r++) {
                VectorMatmul.matvec4Packed(pack, 0, n, x, 3 + r * n, ref8, 8 * r);
                VectorMatmul.matvec4Packed(pack, 8L * n, n, x, 3 + r * n, ref8, 8 * r + 4);
            }
            for (int block : new int[] {1, 2, 3, PackedGemm.K_BLOCK_PAIRS}) {
                float[] got = new float[rows * 8 + 2];
                PackedGemm.groups2(pack, 0, n, x, 3, rows, got, 2, 8, block);
                for (int i = 0; i < ref8.length; i++) {
                    assertEquals(Float.floatToIntBits(ref8[i]), Float.floatToIntBits(got[2 + i]),
                            "groups2 block " + block + " row " + i / 8 + " out " + i % 8);
                }
            }
            for (int g = 0; g < 2; g++) {
                long base = 8L * n * g;
                // reference: the decode kernel, one activation row at a time
                float[] ref = new float[rows * 4];
                for (int r = 0; r < rows; r++) {
                    VectorMatmul.matvec4Packed(pack, base, n, x, 3 + r * n, ref, 4 * r);
                }
                float[] twin = new float[rows * 4];
                float[] rowsOfW = new float[4 * n];
                for (int q = 0; q < 4; q++) {
                    KernelParityTest.SCA.decodeRow(w, 4 * g + q, rowsOfW, q * n);
                }
                for (int r = 0; r < rows; r++) {
                    KernelParityTest.SCA.tile(rowsOfW, 0, 4, x, 3 + r * n, 1, n, twin, 4 * r, 0);
                }
                for (int block : new int[] {1, 2, 3, PackedGemm.K_BLOCK_PAIRS}) {
                    float[] got = new float[rows * 4 + 5];
                    PackedGemm.group(pack, base, n, x, 3, rows, got, 1, 4, block);
                    for (int i = 0; i < ref.length; i++) {
                        String at = "group " + g + " block " + block + " row " + i / 4 + " out " + i % 4;
                        assertEquals(Float.floatToIntBits(ref[i]), Float.floatToIntBits(got[1 + i]), at);
                        assertEquals(twin[i], ref[i], KernelParityTest.tol(n, 2f), "scalar twin: " + at);
                    }
                }
                // each tile on its own, in two column blocks, whichever group() picks on this machine
                int[] widths = rows >= 4 ? new int[] {4, 2, 1} : rows >= 2 ? new int[] {2, 1} : new int[] {1};
                for (int width : widths) {
                    float[] acc = new float[width * 4 * L];
                    int mid = pairs / 2;
                    for (int[] span : new int[][] {{0, mid}, {mid, pairs}}) {
                        switch (width) {
                            case 4 -> PackedTiles.tile4x4(pack, base, n, x, 3, span[0], span[1], acc, 0);
                            case 2 -> PackedTiles.tile4x2(pack, base, n, x, 3, span[0], span[1], acc, 0);
                            default -> PackedTiles.tile4x1(pack, base, x, 3, span[0], span[1], acc, 0);
                        }
                    }
                    if (n % (2 * L) != 0) {
                        PackedTiles.tail(pack, base, n, x, 3, width, acc, 0);
                    }
                    for (int i = 0; i < 4 * width; i++) {
                        assertEquals(Float.floatToIntBits(ref[i]), Float.floatToIntBits(
                                VectorKernels.sumLanes(acc, i * L)), "4x" + width + " tile, output " + i);
                    }
                }
            }
        }
    }

    /**
     * Through the backend: a batch of rows on the prepared (packed) matrices gives each row the bits it gets alone,
     * across the tile widths and the activation row blocks ({@link CpuBackend#gemmRowBlock}).
     */
    @ParameterizedTest
    @ValueSource(ints = {2, 5, 16, 17, 33, 70})
    void preparedBackendGivesEveryRowOfABatchItsBitsAlone(int rows) {
        int n = 5 * L;
        try (Arena arena = Arena.ofShared(); CpuBackend fast = new CpuBackend(new VectorKernels(), 2, "repacked")) {
            Matrix w = KernelParityTest.matrix(arena, DType.BF16, 52, n, 3L * rows);
            fast.prepare(List.of(w));
            assertEquals(true, fast.repacked(w));
            float[] x = KernelParityTest.random(rows * n, rows, 1f);
            float[] batched = new float[rows * 52];
            fast.matmul(w, x, rows, batched);
            for (int r = 0; r < rows; r++) {
                float[] alone = new float[52];
                fast.matmul(w, java.util.Arrays.copyOfRange(x, r * n, (r + 1) * n), 1, alone);
                for (int j = 0; j < 52; j++) {
                    assertEquals(Float.floatToIntBits(alone[j]), Float.floatToIntBits(batched[r * 52 + j]),
                            "row " + r + " out " + j);
                }
            }
        }
    }
}
