package io.tqserve.backend.cpu;

import static io.tqserve.backend.cpu.QuantizedVector.F;
import static io.tqserve.backend.cpu.QuantizedVector.I;
import static io.tqserve.backend.cpu.QuantizedVector.L;
import static io.tqserve.backend.cpu.VectorKernels.LE;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;

/**
 * Multi-row passes (prefill, batched decode, verification) over an 8-bit matrix repacked at load
 * ({@link QuantizedPack}; groups of two blocks, {@link QuantizedGroup8}) as register tiles: two weight rows (one
 * repacked pair, read as one stream) against four activation rows per tile, so each weight's codes are widened once
 * per four activation rows and each activation load feeds two multiply-adds (the 1×4 tile of {@link QuantizedRows}
 * loads one activation vector per multiply-add). The pass walks a span of weight rows ({@link #SPAN}) in column
 * blocks of {@link #BLOCK_COLUMNS} columns: per block, every four activation rows run against every pair of the span,
 * so the span's codes of the block (32 rows · 512 bytes) stay in L1/L2 across the activation rows and the four rows'
 * activations of the block (8 KB) in L1 across the pairs; the tiles' accumulators are kept between blocks in a
 * per-thread array (a store and a load change no bit). The scales are read once per weight row and the bias terms
 * once per (weight row, activation row) ({@link QuantizedPack#biasTerms}), not once per tile.
 *
 * <p>Per pair of (weight row, activation row) the operations and their order are exactly those of the one-row loop
 * {@link QuantizedGroup8#loop2Packed}: the same products of the same widened codes, the same chain of eight
 * multiply-adds per group, the same scale multiply-add into the pair's accumulator in group order, the same lane sum
 * ({@link VectorKernels#sumLanes}) and the same bias term ({@link QuantizedPack#biasTerms}, which the one-row prologue
 * calls). So an output has the same bits whether its activation row runs alone or in any pass
 * ({@code QuantizedTilesTest}, {@code RepackedMatmulTest}); the scalar twin is {@link QuantizedScalar} (the scalar
 * backend), as for the one-row kernels.
 */
final class QuantizedTiles {
    /**
     * Weight rows per span (a multiple of 4). Measured on one Zen 4 core, 64 activation rows against 5632×2048
     * (docs/benchmarks-journal.md, 2026-12-04 21:15): spans of 16–64 rows and blocks of 256–2048 columns all within
     * 46–52 GFLOP/s.
     */
    static final int SPAN = 32;
    /** Columns per block of the pass (a multiple of the 8-bit group loops' 64). */
    static final int BLOCK_COLUMNS = 512;

    private QuantizedTiles() {
    }

    /** A thread's arrays for the passes: scales per weight row, bias terms per output, accumulators. */
    static final class Work {
        float[] scales = new float[0];
        float[] bias = new float[0];
        float[] acc = new float[0];
        float[] sb = new float[0];

        float[] scales(int n) {
            return scales.length >= n ? scales : (scales = new float[n]);
        }

        float[] bias(int n) {
            return bias.length >= n ? bias : (bias = new float[n]);
        }

        float[] acc(int n) {
            return acc.length >= n ? acc : (acc = new float[n]);
        }

        float[] sb(int n) {
            return sb.length >= n ? sb : (sb = new float[n]);
        }
    }

    static final ThreadLocal<Work> WORK = ThreadLocal.withInitial(Work::new);

    /** Whether the passes take the codes: 8-bit groups of two blocks ({@link QuantizedGroup8#applies}). */
    static boolean applies(int bits, int groupSize) {
        return QuantizedGroup8.applies(bits, groupSize) && BLOCK_COLUMNS % groupSize == 0;
    }

    /**
     * The span's scales and bias terms: scales of weight row s + i, group g at {@code scales[i·groups + g]}, the bias
     * term of (weight row s + i, activation row r) at {@code bias[i·acts + r]}, from one prologue per four weight
     * rows and {@link QuantizedPack#biasTerms} per activation row.
     */
    static void prologue(QuantizedPack p, int s, int rows, int n, float[] xsum, int acts, float[] sb, float[] scales,
            float[] bias) {
        int groups = n / p.groupSize();
        float[] four = new float[4];
        for (int i = 0; i < rows; i += 4) {
            p.prologue(s + i, n, xsum, 0, sb);
            System.arraycopy(sb, 0, scales, i * groups, 4 * groups);
            for (int r = 0; r < acts; r++) {
                p.biasTerms(s + i, groups, xsum, r * groups, sb, four, 0);
                for (int q = 0; q < 4; q++) {
                    bias[(i + q) * acts + r] = four[q];
                }
            }
        }
    }

    /**
     * Output rows [from, to) (multiples of 4) of the 8-bit pack p against activation rows [0, acts) (a multiple of 4;
     * row r at {@code x[r·n..]} in the kernels' order, its group sums at {@code xsum[r·groups..]}), into
     * {@code out[r·outDim + row]}.
     */
    static void group8(QuantizedPack p, int from, int to, int n, float[] x, float[] xsum, int acts, float[] out,
            int outDim) {
        Work w = WORK.get();
        int groups = n / p.groupSize();
        int per = BLOCK_COLUMNS / p.groupSize();
        float[] sb = w.sb(QuantizedVector.scratchSize(8, n, p.groupSize()));
        for (int s = from; s < to; s += SPAN) {
            int rows = Math.min(SPAN, to - s);
            float[] scales = w.scales(rows * groups);
            float[] bias = w.bias(rows * acts);
            float[] acc = w.acc(rows * acts * L);
            prologue(p, s, rows, n, xsum, acts, sb, scales, bias);
            Arrays.fill(acc, 0, rows * acts * L, 0f);
            for (int g0 = 0; g0 < groups; g0 += per) {
                int g1 = Math.min(groups, g0 + per);
                for (int a = 0; a < acts; a += 4) {
                    for (int q = 0; q < rows; q += 2) {
                        tile8(p.codes(), (s + q) * p.rowBytes(), g0, g1, n, x, a * n, scales, q * groups, groups,
                                acc, (q * acts + 2 * a) * L);
                    }
                }
            }
            finish(acc, bias, s, rows, acts, 0, out, outDim);
        }
    }

    /**
     * out[r·outDim + s + i] = the fixed-order lane sum of the accumulator of (weight row s + i, activation row r) +
     * its bias term. The accumulators of a tile (pair q, activation rows a..a+w-1) are at
     * {@code acc[(q·acts + 2a)·L..]}, weight row q's w then row q + 1's; tiles are eight rows wide below
     * {@code wide} and four rows wide from there.
     */
    static void finish(float[] acc, float[] bias, int s, int rows, int acts, int wide, float[] out, int outDim) {
        for (int q = 0; q < rows; q += 2) {
            for (int a = 0; a < acts; a++) {
                int width = a < wide ? 8 : 4;
                int a0 = a < wide ? a & ~7 : wide + ((a - wide) & ~3);
                int t = (q * acts + 2 * a0) * L + (a - a0) * L;
                for (int i = 0; i < 2; i++) {
                    out[a * outDim + s + q + i] = VectorKernels.sumLanes(acc, t + width * i * L, L)
                            + bias[(q + i) * acts + a];
                }
            }
        }
    }

    /**
     * One repacked pair of 8-bit rows (byte offset b0; per group row 0's two blocks and row 1's interleaved as
     * {@link QuantizedGroup8#loop2Packed} reads them) against the four activation rows at x[xOff], x[xOff + n], ...
     * over groups [g0, g1): per pair of rows the operations of {@link QuantizedGroup8#loop2Packed}, row 0's scale of
     * group g at {@code sc[s0 + g]}, row 1's at {@code sc[s0 + groups + g]}; the eight accumulators (row 0's four,
     * then row 1's) are read from and written back to {@code acc[at..at + 8L)}. The codes' loop is left to C2 as a
     * loop: written out, C2 scheduled all sixteen widened codes of a group first and spilled the chains.
     */
    static void tile8(MemorySegment seg, long b0, int g0, int g1, int n, float[] x, int xOff, float[] sc, int s0,
            int groups, float[] acc, int at) {
        int s1 = s0 + groups;
        FloatVector c00 = FloatVector.fromArray(F, acc, at);
        FloatVector c01 = FloatVector.fromArray(F, acc, at + L);
        FloatVector c02 = FloatVector.fromArray(F, acc, at + 2 * L);
        FloatVector c03 = FloatVector.fromArray(F, acc, at + 3 * L);
        FloatVector c10 = FloatVector.fromArray(F, acc, at + 4 * L);
        FloatVector c11 = FloatVector.fromArray(F, acc, at + 5 * L);
        FloatVector c12 = FloatVector.fromArray(F, acc, at + 6 * L);
        FloatVector c13 = FloatVector.fromArray(F, acc, at + 7 * L);
        // the group index is the loop's counter, so every read is linear in it (QuantizedLoops#loop2Q4)
        for (int g = g0; g < g1; g++) {
            int k = xOff + g * (8 * L);
            long off = b0 + g * (16L * L);
            FloatVector e00 = FloatVector.zero(F);
            FloatVector e01 = FloatVector.zero(F);
            FloatVector e02 = FloatVector.zero(F);
            FloatVector e03 = FloatVector.zero(F);
            FloatVector e10 = FloatVector.zero(F);
            FloatVector e11 = FloatVector.zero(F);
            FloatVector e12 = FloatVector.zero(F);
            FloatVector e13 = FloatVector.zero(F);
            // the group's two blocks, h = 0 then 1, codes 0..3 of each block's ints: the order of loop2Packed's chain
            for (int h = 0; h < 2; h++) {
                IntVector v0 = IntVector.fromMemorySegment(I, seg, off + h * (8L * L), LE);
                IntVector v1 = IntVector.fromMemorySegment(I, seg, off + h * (8L * L) + 4L * L, LE);
                int kh = k + h * (4 * L);
                for (int c = 0; c < 4; c++) {
                    FloatVector f0 = c < 3
                            ? (FloatVector) v0.lanewise(VectorOperators.AND, 0xFF << (8 * c)).convert(VectorOperators.I2F, 0)
                            : (FloatVector) v0.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0);
                    FloatVector f1 = c < 3
                            ? (FloatVector) v1.lanewise(VectorOperators.AND, 0xFF << (8 * c)).convert(VectorOperators.I2F, 0)
                            : (FloatVector) v1.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0);
                    int kc = kh + c * L;
                    FloatVector xv = FloatVector.fromArray(F, x, kc);
                    e00 = f0.fma(xv, e00);
                    e10 = f1.fma(xv, e10);
                    xv = FloatVector.fromArray(F, x, kc + n);
                    e01 = f0.fma(xv, e01);
                    e11 = f1.fma(xv, e11);
                    xv = FloatVector.fromArray(F, x, kc + 2 * n);
                    e02 = f0.fma(xv, e02);
                    e12 = f1.fma(xv, e12);
                    xv = FloatVector.fromArray(F, x, kc + 3 * n);
                    e03 = f0.fma(xv, e03);
                    e13 = f1.fma(xv, e13);
                }
            }
            FloatVector scale = FloatVector.broadcast(F, sc[s0 + g]);
            c00 = e00.fma(scale, c00);
            c01 = e01.fma(scale, c01);
            c02 = e02.fma(scale, c02);
            c03 = e03.fma(scale, c03);
            scale = FloatVector.broadcast(F, sc[s1 + g]);
            c10 = e10.fma(scale, c10);
            c11 = e11.fma(scale, c11);
            c12 = e12.fma(scale, c12);
            c13 = e13.fma(scale, c13);
        }
        // typed as F's vector class first (QuantizedLoops' class comment)
        ((FloatVector) F.vectorType().cast(c00)).intoArray(acc, at);
        ((FloatVector) F.vectorType().cast(c01)).intoArray(acc, at + L);
        ((FloatVector) F.vectorType().cast(c02)).intoArray(acc, at + 2 * L);
        ((FloatVector) F.vectorType().cast(c03)).intoArray(acc, at + 3 * L);
        ((FloatVector) F.vectorType().cast(c10)).intoArray(acc, at + 4 * L);
        ((FloatVector) F.vectorType().cast(c11)).intoArray(acc, at + 5 * L);
        ((FloatVector) F.vectorType().cast(c12)).intoArray(acc, at + 6 * L);
        ((FloatVector) F.vectorType().cast(c13)).intoArray(acc, at + 7 * L);
    }
}
