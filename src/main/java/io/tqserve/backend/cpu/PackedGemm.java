package io.tqserve.backend.cpu;

import static io.tqserve.backend.cpu.VectorKernels.L;
import static io.tqserve.backend.cpu.VectorKernels.sumLanes;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * The multi-row bf16 matmul (several activation rows: a batched decode step, a verification pass, a prefill) on the
 * weights repacked at load ({@link VectorMatmul#pack4}). Scalar twin: {@link ScalarKernels#tile} on the rows decoded
 * to floats ({@code PackedGemmTest}).
 *
 * <p>One pass over each weight matrix serves every activation row of the pass: a thread takes a block of output
 * rows, and for each group of four packed weight rows (one contiguous stream, which the hardware prefetcher follows
 * as the decode kernel's) computes the group against all activation rows before it moves on. Register tiles
 * ({@link PackedTiles}) read the packed words directly (a shift gives a word's low bf16 as a float, a mask its high
 * one): eight weight rows (two groups, {@link #groups2}) by two activation rows with 512-bit vectors (32
 * registers), four by two with AVX2's 16. Above
 * {@link #UNBLOCKED_ROWS} rows the group's columns are walked in blocks
 * ({@link #K_BLOCK_PAIRS}): within a block every tile of the pass runs, so the block's packed words stay in L1 for
 * all activation rows and each activation slice is read once per group, where whole-row tiles (four activation rows
 * plus the group's words, 48 KB at 2048 columns) overflowed L1 and ran from L2. Widening the group to floats once and running float tiles over it was tried before: twice the bytes per weight
 * in L1 for the same multiply-adds, slower than the packed tiles.
 *
 * <p>Each output keeps the arithmetic of {@link VectorMatmul#matvec4Packed}: one accumulator vector whose lane j
 * adds column {@code i+j}, then {@code i+L+j}, step after step (kept in a per-thread array between column blocks,
 * which changes no bit), then {@link VectorKernels#sumLanes}. So a row's numbers are those it gets alone (batch
 * invariance), whichever tile and block size computes it. The horizontal sums cost L loads and L - 1 adds per
 * output against the n / L multiply-adds of its row: a few percent with 8 lanes, about a tenth with 16 at 2048
 * columns.
 */
final class PackedGemm {
    /** Columns per block of {@link #group} ({@code -Dtqserve.cpu.gemm-k-block}, default 512), as 2L-column steps. */
    static final int K_BLOCK_PAIRS = Math.max(1, Integer.getInteger("tqserve.cpu.gemm-k-block", 512) / (2 * L));

    /**
     * Whether {@link #groups2} runs (two groups per tile, {@link PackedTiles#tile8x2}): with 512-bit vectors, whose 32
     * registers hold its 16 accumulators ({@code -Dtqserve.cpu.gemm-8x2=false} keeps one group per pass).
     */
    static final boolean TWO_GROUPS = VectorKernels.WIDE_TILES
            && !"false".equalsIgnoreCase(System.getProperty("tqserve.cpu.gemm-8x2", "true"));

    /**
     * Passes of up to this many activation rows walk whole rows, unblocked ({@code -Dtqserve.cpu.gemm-unblocked-rows};
     * default: every pass with AVX2's 4×2 tiles, 32 — every pass at the default row block — with the 8×2 tiles of
     * 512-bit vectors, 8 with their 4×4 tiles). Each column block costs a store and a reload of every accumulator of
     * the pass and a short inner loop per tile. On a Zen 3 core (AVX2, one kernel thread, thread CPU time) whole rows
     * were the faster at every pass size measured: 16, 32 and 64 rows of 2048×2048, 5632×2048 and 2048×5632 matrices
     * ran at 0.57–0.77 of the FMA peak whole against 0.49–0.67 in 512-column blocks (smaller blocks slower still,
     * 1024-column ones in between). With the 8×2 tiles on a Zen 5 core the whole-row walk was likewise the faster
     * (16, 32 and 64 rows of a 5632×2048 matrix, and 16 of 2048×5632: up to 1.3× the 512-column blocks), so 512-bit
     * machines block only passes above the default row block.
     */
    static final int UNBLOCKED_ROWS = Integer.getInteger("tqserve.cpu.gemm-unblocked-rows",
            TWO_GROUPS ? 32 : VectorKernels.WIDE_TILES ? 8 : Integer.MAX_VALUE);

    /** Per-thread accumulators of a pass: 4·L floats per activation row (twice that for {@link #groups2}). */
    private static final ThreadLocal<float[]> ACC = new ThreadLocal<>();

    private PackedGemm() {
    }

    /** The multi-row kernel's tiles and blocking, for the backend's startup line and {@code bench decode}. */
    static String describe() {
        return (TWO_GROUPS ? "8x2 tiles" : VectorKernels.WIDE_TILES ? "4x4 tiles" : "4x2 tiles")
                + (UNBLOCKED_ROWS == Integer.MAX_VALUE ? ", whole rows for every pass"
                        : ", whole rows for passes of up to " + UNBLOCKED_ROWS + " activation rows, "
                                + K_BLOCK_PAIRS * 2 * L + "-column blocks above")
                + ", passes of " + CpuBackend.GEMM_ROW_BLOCK + " activation rows"
                + (VectorKernels.WIDE_TILES ? " at 2048 columns" : "")
                + " (-Dtqserve.cpu.gemm-8x2, gemm-unblocked-rows, gemm-k-block, gemm-row-block)";
    }

    /**
     * Output rows [j, j+4) (one packed group at byte offset base, n columns) for activation rows [0, rows) of x
     * (row r at xOff + r·n): out[outOff + r·outStride + q].
     */
    static void group(MemorySegment pack, long base, int n, float[] x, int xOff, int rows, float[] out, int outOff,
            int outStride) {
        group(pack, base, n, x, xOff, rows, out, outOff, outStride,
                rows <= UNBLOCKED_ROWS ? Math.max(1, n / (2 * L)) : K_BLOCK_PAIRS);
    }

    /** {@link #group} with blocks of {@code blockPairs} 2L-column steps (any count gives the same bits). */
    static void group(MemorySegment pack, long base, int n, float[] x, int xOff, int rows, float[] out, int outOff,
            int outStride, int blockPairs) {
        int tileRows = VectorKernels.WIDE_TILES ? 4 : 2;
        int need = rows * 4 * L;
        float[] acc = ACC.get();
        if (acc == null || acc.length < need) {
            acc = new float[need];
            ACC.set(acc);
        }
        Arrays.fill(acc, 0, need, 0f);
        int pairs = n / (2 * L);
        for (int p0 = 0; p0 < pairs; p0 += blockPairs) {
            int p1 = Math.min(pairs, p0 + blockPairs);
            int r = 0;
            if (tileRows == 4) {
                for (; r + 4 <= rows; r += 4) {
                    PackedTiles.tile4x4(pack, base, n, x, xOff + r * n, p0, p1, acc, r * 4 * L);
                }
            }
            for (; r + 2 <= rows; r += 2) {
                PackedTiles.tile4x2(pack, base, n, x, xOff + r * n, p0, p1, acc, r * 4 * L);
            }
            for (; r < rows; r++) {
                PackedTiles.tile4x1(pack, base, x, xOff + r * n, p0, p1, acc, r * 4 * L);
            }
        }
        if (n % (2 * L) != 0) {
            PackedTiles.tail(pack, base, n, x, xOff, rows, acc, 0);
        }
        for (int r = 0; r < rows; r++) {
            for (int q = 0; q < 4; q++) {
                out[outOff + r * outStride + q] = sumLanes(acc, (4 * r + q) * L);
            }
        }
    }

    /**
     * Output rows [j, j+8) (two packed groups, the first at byte offset base) for activation rows [0, rows), as two
     * calls of {@link #group} compute them (the same bits), with the 8×2 tiles: each activation vector loaded once
     * for eight weight rows.
     */
    static void groups2(MemorySegment pack, long base, int n, float[] x, int xOff, int rows, float[] out, int outOff,
            int outStride) {
        groups2(pack, base, n, x, xOff, rows, out, outOff, outStride,
                rows <= UNBLOCKED_ROWS ? Math.max(1, n / (2 * L)) : K_BLOCK_PAIRS);
    }

    /** {@link #groups2} with blocks of {@code blockPairs} 2L-column steps (any count gives the same bits). */
    static void groups2(MemorySegment pack, long base, int n, float[] x, int xOff, int rows, float[] out, int outOff,
            int outStride, int blockPairs) {
        int per = rows * 4 * L;
        float[] acc = ACC.get();
        if (acc == null || acc.length < 2 * per) {
            acc = new float[2 * per];
            ACC.set(acc);
        }
        Arrays.fill(acc, 0, 2 * per, 0f);
        long base2 = base + 8L * n;
        int pairs = n / (2 * L);
        for (int p0 = 0; p0 < pairs; p0 += blockPairs) {
            int p1 = Math.min(pairs, p0 + blockPairs);
            int r = 0;
            for (; r + 2 <= rows; r += 2) {
                PackedTiles.tile8x2(pack, base, base2, n, x, xOff + r * n, p0, p1, acc, r * 4 * L, acc, per + r * 4 * L);
            }
            for (; r < rows; r++) {
                PackedTiles.tile4x1(pack, base, x, xOff + r * n, p0, p1, acc, r * 4 * L);
                PackedTiles.tile4x1(pack, base2, x, xOff + r * n, p0, p1, acc, per + r * 4 * L);
            }
        }
        if (n % (2 * L) != 0) {
            PackedTiles.tail(pack, base, n, x, xOff, rows, acc, 0);
            PackedTiles.tail(pack, base2, n, x, xOff, rows, acc, per);
        }
        for (int r = 0; r < rows; r++) {
            for (int q = 0; q < 4; q++) {
                out[outOff + r * outStride + q] = sumLanes(acc, (4 * r + q) * L);
                out[outOff + r * outStride + 4 + q] = sumLanes(acc, per + (4 * r + q) * L);
            }
        }
    }
}
