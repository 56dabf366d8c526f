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
 * registers) for passes of at least {@link #TWO_GROUP_FLOATS} activation floats, four by four below that, four by two
 * with AVX2's 16. The rows the widest tile leaves over run first (the one-row loop, then a 4×2): a group's first tile
 * streams its words from memory, and the narrower loop streams faster. Above
 * {@link #UNBLOCKED_ROWS} rows the group's columns are walked in blocks
 * ({@link #K_BLOCK_PAIRS}): within a block every tile of the pass runs, so the block's packed words stay in L1 for
 * all activation rows and each activation slice is read once per group, where whole-row tiles (four activation rows
 * plus the group's words, 48 KB at 2048 columns) overflowed L1 and ran from L2. Widening the group to floats once and running float tiles over it was tried before: twice the bytes per weight
 * in L1 for the same multiply-adds, slower than the packed tiles.
 *
 * <p>Each output keeps the arithmetic of {@link VectorMatmul#matvec4Packed}: one accumulator vector whose lane j
 * adds column {@code i+j}, then {@code i+L+j}, step after step (kept in a per-thread array between column blocks,
 * which changes no bit), then {@link VectorKernels#sumLanes}'s fold. So a row's numbers are those it gets alone
 * (batch invariance), whichever tile and block size computes it. With 16 lanes the fold runs sixteen outputs at a
 * time in registers ({@link LaneSums}: the same additions in the same order); the scalar fold, L loads and L - 1
 * adds per output against the n / L multiply-adds of its row, was a few percent with 8 lanes but a large share with
 * 16 at 512 columns (on a Zen 4 core the vector sums made 8 and 16 activation rows of a 1408×512 matrix 5–8% faster,
 * of 512×1408 3%).
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
     * Activation floats a pass must have (rows × columns) for {@link #groups2} to run rather than the one-group tiles
     * ({@code -Dtqserve.cpu.gemm-8x2-floats}, default 3584: 14 KB, under half a Zen 4 or Zen 5 L1). The 8×2 tile
     * halves the activation loads, which is what bounds the 4×4 tile once the pass's activations come from L2; below
     * that they stay in L1 and the 8×2 tile's own cost shows instead: it reads two groups (two streams 8·n bytes
     * apart) where the one-group tiles read one, and from memory that ran at as little as a third of the one-stream
     * rate. On a Zen 4 core (one kernel thread, thread CPU time, arms interleaved, load 2–5): a 32000×512 matrix at 2,
     * 3, 4, 5 activation rows took 0.48, 0.58, 0.55–0.71, 0.66–0.80 of the 8×2 time with the one-group tiles, at 6
     * to 9 rows 0.95–1.02; 16384×768 and 8192×1024 at 2 rows 0.44 and 0.80, at 3 rows 0.54 and 0.91, at 5 rows
     * 1.01–1.03; 8192×1408 at 2 rows 0.80, at 3 and more 1.14–1.20 (8×2 faster); 4096×2048 and 2048×5632 at every
     * row count 1.02–1.42 (8×2 faster). {@code 0} keeps the 8×2 tiles for every pass.
     */
    static final int TWO_GROUP_FLOATS = Integer.getInteger("tqserve.cpu.gemm-8x2-floats", 3584);

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

    /** Whether a pass of {@code rows} activation rows of n columns runs {@link #groups2} ({@link #TWO_GROUP_FLOATS}). */
    static boolean twoGroups(int rows, int n) {
        return TWO_GROUPS && (long) rows * n >= TWO_GROUP_FLOATS;
    }

    /** The multi-row kernel's tiles and blocking, for the backend's startup line and {@code bench decode}. */
    static String describe() {
        return (TWO_GROUPS ? "8x2 tiles for passes of at least " + TWO_GROUP_FLOATS + " activation floats, 4x4 below"
                : VectorKernels.WIDE_TILES ? "4x4 tiles" : "4x2 tiles")
                + (UNBLOCKED_ROWS == Integer.MAX_VALUE ? ", whole rows for every pass"
                        : ", whole rows for passes of up to " + UNBLOCKED_ROWS + " activation rows, "
                                + K_BLOCK_PAIRS * 2 * L + "-column blocks above")
                + ", passes of " + CpuBackend.GEMM_ROW_BLOCK + " activation rows"
                + (VectorKernels.WIDE_TILES ? " at 2048 columns" : "")
                + " (-Dtqserve.cpu.gemm-8x2, gemm-8x2-floats, gemm-unblocked-rows, gemm-k-block, gemm-row-block)";
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
        float[] acc = accumulators(need);
        Arrays.fill(acc, 0, need, 0f);
        int pairs = n / (2 * L);
        for (int p0 = 0; p0 < pairs; p0 += blockPairs) {
            int p1 = Math.min(pairs, p0 + blockPairs);
            // the rows left over by the widest tile first, narrowest first: the first tile of a group streams its
            // words from memory, and the narrower its loop the faster it streams
            int wide = tileRows == 4 ? rows / 4 * 4 : rows / 2 * 2;
            int r = 0;
            if (((rows - wide) & 1) != 0) {
                PackedTiles.tile4x1(pack, base, x, xOff, p0, p1, acc, 0);
                r = 1;
            }
            if (rows - wide - r >= 2) {
                PackedTiles.tile4x2(pack, base, n, x, xOff + r * n, p0, p1, acc, r * 4 * L);
                r += 2;
            }
            for (; r + 4 <= rows && tileRows == 4; r += 4) {
                PackedTiles.tile4x4(pack, base, n, x, xOff + r * n, p0, p1, acc, r * 4 * L);
            }
            for (; r + 2 <= rows; r += 2) {
                PackedTiles.tile4x2(pack, base, n, x, xOff + r * n, p0, p1, acc, r * 4 * L);
            }
        }
        if (n % (2 * L) != 0) {
            PackedTiles.tail(pack, base, n, x, xOff, rows, acc, 0);
        }
        if (LaneSums.applies()) {
            for (int r = 0; r < rows; r += 4) { // four activation rows' sums at a time (the last repeated)
                int last = rows - 1;
                LaneSums.sums(acc, 4 * r * L, 4 * Math.min(r + 1, last) * L, 4 * Math.min(r + 2, last) * L,
                        4 * Math.min(r + 3, last) * L, acc, need);
                for (int i = 0; i < 4 && r + i < rows; i++) {
                    System.arraycopy(acc, need + 4 * i, out, outOff + (r + i) * outStride, 4);
                }
            }
            return;
        }
        for (int r = 0; r < rows; r++) {
            for (int q = 0; q < 4; q++) {
                out[outOff + r * outStride + q] = sumLanes(acc, (4 * r + q) * L);
            }
        }
    }

    /** This thread's accumulator array, room for {@code need} floats plus 16 for {@link LaneSums}' results. */
    private static float[] accumulators(int need) {
        float[] acc = ACC.get();
        if (acc == null || acc.length < need + 16) {
            acc = new float[need + 16];
            ACC.set(acc);
        }
        return acc;
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
        float[] acc = accumulators(2 * per);
        Arrays.fill(acc, 0, 2 * per, 0f);
        long base2 = base + 8L * n;
        int pairs = n / (2 * L);
        for (int p0 = 0; p0 < pairs; p0 += blockPairs) {
            int p1 = Math.min(pairs, p0 + blockPairs);
            int r = 0;
            if ((rows & 1) != 0) { // the odd row first: its one-row loop streams the groups from memory faster
                PackedTiles.tile4x1(pack, base, x, xOff, p0, p1, acc, 0);
                PackedTiles.tile4x1(pack, base2, x, xOff, p0, p1, acc, per);
                r = 1;
            }
            for (; r + 2 <= rows; r += 2) {
                PackedTiles.tile8x2(pack, base, base2, n, x, xOff + r * n, p0, p1, acc, r * 4 * L, acc, per + r * 4 * L);
            }
        }
        if (n % (2 * L) != 0) {
            PackedTiles.tail(pack, base, n, x, xOff, rows, acc, 0);
            PackedTiles.tail(pack, base2, n, x, xOff, rows, acc, per);
        }
        if (LaneSums.applies()) {
            for (int r = 0; r < rows; r += 2) { // two activation rows' eight sums at a time (the last repeated)
                int s = 4 * Math.min(r + 1, rows - 1) * L;
                LaneSums.sums(acc, 4 * r * L, per + 4 * r * L, s, per + s, acc, 2 * per);
                System.arraycopy(acc, 2 * per, out, outOff + r * outStride, 8);
                if (r + 1 < rows) {
                    System.arraycopy(acc, 2 * per + 8, out, outOff + (r + 1) * outStride, 8);
                }
            }
            return;
        }
        for (int r = 0; r < rows; r++) {
            for (int q = 0; q < 4; q++) {
                out[outOff + r * outStride + q] = sumLanes(acc, (4 * r + q) * L);
                out[outOff + r * outStride + 4 + q] = sumLanes(acc, per + (4 * r + q) * L);
            }
        }
    }
}
