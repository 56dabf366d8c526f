package io.tqserve.backend.cpu;

import static io.tqserve.backend.cpu.QuantizedVector.F;
import static io.tqserve.backend.cpu.QuantizedVector.I;
import static io.tqserve.backend.cpu.QuantizedVector.L;
import static io.tqserve.backend.cpu.VectorKernels.LANES;
import static io.tqserve.backend.cpu.VectorKernels.LE;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;

/**
 * The multi-row form of {@link QuantizedVector#matvecPacked}, for prefill and batched decode: one weight row's codes
 * are loaded and widened to floats once per block and multiplied into four activation rows, instead of once per
 * activation row. Per pair of (weight row, activation row) the operations and their order are exactly those of the
 * one-row loops ({@link QuantizedLoops#loop2Q4Packed}, {@link QuantizedLoops#loop2Q4Span2Packed},
 * {@link QuantizedLoops#loop2Q8Packed}, {@link QuantizedGroup8#loop2Packed}): the same products of the same widened codes, the same multiply-add chain
 * per block, the same scale multiply-add into the row's accumulator, the same lane sum and bias term. So an output
 * has the same bits whether its activation row runs alone, in a group of four, or as one of a batch's leftover rows,
 * which keep the one-row kernel. Per weight and four activation rows that is one AND, one conversion, four loads of
 * x and four multiply-adds, against four of each with the one-row kernel; the operands (four chain sums, four
 * accumulators, the codes, the widened codes, an activation vector and the scale) fit the 16 vector registers of
 * AVX2.
 */
final class QuantizedRows {
    private QuantizedRows() {
    }

    /**
     * Rows row..row+3 (a multiple of 4) of the repacked matrix p against activation rows a..a+3 (each in the kernels'
     * order, row r at {@code x[r·n..]}, its group sums at {@code xsum[r·groups..]}), into {@code out[r·outDim + row
     * + q]}. {@code sbs} holds four scratch arrays of {@link QuantizedVector#scratchSize} floats.
     */
    static void block4(QuantizedPack p, int bits, int row, int n, float[] x, float[] xsum, int a, float[][] sbs,
            float[] out, int outDim) {
        int groups = 0;
        for (int r = 0; r < 4; r++) {
            groups = p.prologue(row, n, xsum, (a + r) * (n / p.groupSize()), sbs[r]);
        }
        float[] sb = sbs[0];
        int blocks = n / QuantizedVector.block(bits);
        int base = QuantizedGroup8.applies(bits, p.groupSize()) ? 0 : QuantizedVector.scales(sb, groups, blocks);
        boolean span2 = QuantizedVector.span2(bits, p.groupSize());
        float[] lanes = LANES.get();
        for (int q = 0; q < 4; q++) {
            // row q of the block: its pair's stream, the second row's loads after the first's (QuantizedPack)
            long b = (row + (q & ~1)) * p.rowBytes() + (q & 1) * 4L * L;
            if (span2) {
                tileQ4Span2(p.codes(), b, n, base + q * groups, x, a * n, sb, lanes);
            } else if (QuantizedGroup8.applies(bits, p.groupSize())) {
                QuantizedGroup8.tile(p.codes(), b, n, q * groups, x, a * n, sb, lanes);
            } else if (bits == 4) {
                tileQ4(p.codes(), b, n, base + q * blocks, x, a * n, sb, lanes);
            } else {
                tileQ8(p.codes(), b, n, base + q * blocks, x, a * n, sb, lanes);
            }
            for (int r = 0; r < 4; r++) {
                out[(a + r) * outDim + row + q] = VectorKernels.sumLanes(lanes, r * L, L) + sbs[r][4 * groups + q];
            }
        }
    }

    /**
     * One 4-bit weight row (byte offset b0 of seg, L ints per block every {@code 8·L} bytes) against the four
     * activation rows at x[xOff], x[xOff + n], ...: the four accumulators of {@link QuantizedLoops#loop2Q4Packed}
     * (scale of block t at {@code sb[s + t]}) to lanes[0..4L).
     */
    static void tileQ4(MemorySegment seg, long b0, int n, int s, float[] x, int xOff, float[] sb, float[] lanes) {
        int blocks = n / (8 * L);
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        FloatVector c2 = FloatVector.zero(F);
        FloatVector c3 = FloatVector.zero(F);
        // the block index is the loop's counter so that every read is linear in it (QuantizedLoops#loop2Q4)
        for (int t = 0; t < blocks; t++) {
            int k = xOff + t * (8 * L);
            IntVector v = IntVector.fromMemorySegment(I, seg, b0 + t * (8L * L), LE);
            FloatVector f = (FloatVector) v.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0);
            FloatVector e0 = f.mul(FloatVector.fromArray(F, x, k));
            FloatVector e1 = f.mul(FloatVector.fromArray(F, x, k + n));
            FloatVector e2 = f.mul(FloatVector.fromArray(F, x, k + 2 * n));
            FloatVector e3 = f.mul(FloatVector.fromArray(F, x, k + 3 * n));
            for (int c = 1, mask = 0xF0; c < 7; c++, mask <<= 4) {
                f = (FloatVector) v.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0);
                int kc = k + c * L;
                e0 = f.fma(FloatVector.fromArray(F, x, kc), e0);
                e1 = f.fma(FloatVector.fromArray(F, x, kc + n), e1);
                e2 = f.fma(FloatVector.fromArray(F, x, kc + 2 * n), e2);
                e3 = f.fma(FloatVector.fromArray(F, x, kc + 3 * n), e3);
            }
            f = (FloatVector) v.lanewise(VectorOperators.LSHR, 28).convert(VectorOperators.I2F, 0);
            int k7 = k + 7 * L;
            e0 = f.fma(FloatVector.fromArray(F, x, k7), e0);
            e1 = f.fma(FloatVector.fromArray(F, x, k7 + n), e1);
            e2 = f.fma(FloatVector.fromArray(F, x, k7 + 2 * n), e2);
            e3 = f.fma(FloatVector.fromArray(F, x, k7 + 3 * n), e3);
            FloatVector scale = FloatVector.broadcast(F, sb[s + t]);
            c0 = e0.fma(scale, c0);
            c1 = e1.fma(scale, c1);
            c2 = e2.fma(scale, c2);
            c3 = e3.fma(scale, c3);
        }
        store(c0, c1, c2, c3, lanes);
    }

    /**
     * {@link #tileQ4} where a block holds two groups ({@link QuantizedVector#span2}): the scale vector of
     * {@link QuantizedLoops#loop2Q4Span2Packed} ({@code sb[s + 2t]} on the low lanes, {@code sb[s + 2t + 1]} on the
     * high ones).
     */
    static void tileQ4Span2(MemorySegment seg, long b0, int n, int s, float[] x, int xOff, float[] sb,
            float[] lanes) {
        int blocks = n / (8 * L);
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        FloatVector c2 = FloatVector.zero(F);
        FloatVector c3 = FloatVector.zero(F);
        for (int t = 0; t < blocks; t++) {
            int k = xOff + t * (8 * L);
            IntVector v = IntVector.fromMemorySegment(I, seg, b0 + t * (8L * L), LE);
            FloatVector f = (FloatVector) v.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0);
            FloatVector e0 = f.mul(FloatVector.fromArray(F, x, k));
            FloatVector e1 = f.mul(FloatVector.fromArray(F, x, k + n));
            FloatVector e2 = f.mul(FloatVector.fromArray(F, x, k + 2 * n));
            FloatVector e3 = f.mul(FloatVector.fromArray(F, x, k + 3 * n));
            for (int c = 1, mask = 0xF0; c < 7; c++, mask <<= 4) {
                f = (FloatVector) v.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0);
                int kc = k + c * L;
                e0 = f.fma(FloatVector.fromArray(F, x, kc), e0);
                e1 = f.fma(FloatVector.fromArray(F, x, kc + n), e1);
                e2 = f.fma(FloatVector.fromArray(F, x, kc + 2 * n), e2);
                e3 = f.fma(FloatVector.fromArray(F, x, kc + 3 * n), e3);
            }
            f = (FloatVector) v.lanewise(VectorOperators.LSHR, 28).convert(VectorOperators.I2F, 0);
            int k7 = k + 7 * L;
            e0 = f.fma(FloatVector.fromArray(F, x, k7), e0);
            e1 = f.fma(FloatVector.fromArray(F, x, k7 + n), e1);
            e2 = f.fma(FloatVector.fromArray(F, x, k7 + 2 * n), e2);
            e3 = f.fma(FloatVector.fromArray(F, x, k7 + 3 * n), e3);
            FloatVector scale = FloatVector.broadcast(F, sb[s + 2 * t])
                    .blend(FloatVector.broadcast(F, sb[s + 2 * t + 1]), QuantizedLoops.HIGH);
            c0 = e0.fma(scale, c0);
            c1 = e1.fma(scale, c1);
            c2 = e2.fma(scale, c2);
            c3 = e3.fma(scale, c3);
        }
        store(c0, c1, c2, c3, lanes);
    }

    /**
     * One 8-bit weight row (L ints per block every {@code 8·L} bytes) against four activation rows: the accumulators
     * of {@link QuantizedLoops#loop2Q8Packed}, its chain starting as a multiply-add into zero as there.
     */
    static void tileQ8(MemorySegment seg, long b0, int n, int s, float[] x, int xOff, float[] sb, float[] lanes) {
        int blocks = n / (4 * L);
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        FloatVector c2 = FloatVector.zero(F);
        FloatVector c3 = FloatVector.zero(F);
        for (int t = 0; t < blocks; t++) {
            int k = xOff + t * (4 * L);
            IntVector v = IntVector.fromMemorySegment(I, seg, b0 + t * (8L * L), LE);
            FloatVector e0 = FloatVector.zero(F);
            FloatVector e1 = FloatVector.zero(F);
            FloatVector e2 = FloatVector.zero(F);
            FloatVector e3 = FloatVector.zero(F);
            FloatVector f;
            for (int c = 0, mask = 0xFF; c < 3; c++, mask <<= 8) {
                f = (FloatVector) v.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0);
                int kc = k + c * L;
                e0 = f.fma(FloatVector.fromArray(F, x, kc), e0);
                e1 = f.fma(FloatVector.fromArray(F, x, kc + n), e1);
                e2 = f.fma(FloatVector.fromArray(F, x, kc + 2 * n), e2);
                e3 = f.fma(FloatVector.fromArray(F, x, kc + 3 * n), e3);
            }
            f = (FloatVector) v.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0);
            int k3 = k + 3 * L;
            e0 = f.fma(FloatVector.fromArray(F, x, k3), e0);
            e1 = f.fma(FloatVector.fromArray(F, x, k3 + n), e1);
            e2 = f.fma(FloatVector.fromArray(F, x, k3 + 2 * n), e2);
            e3 = f.fma(FloatVector.fromArray(F, x, k3 + 3 * n), e3);
            FloatVector scale = FloatVector.broadcast(F, sb[s + t]);
            c0 = e0.fma(scale, c0);
            c1 = e1.fma(scale, c1);
            c2 = e2.fma(scale, c2);
            c3 = e3.fma(scale, c3);
        }
        store(c0, c1, c2, c3, lanes);
    }

    /** The four accumulators to lanes[0..4L), typed as F's vector class first (QuantizedLoops' class comment). */
    private static void store(FloatVector c0, FloatVector c1, FloatVector c2, FloatVector c3, float[] lanes) {
        ((FloatVector) F.vectorType().cast(c0)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c1)).intoArray(lanes, L);
        ((FloatVector) F.vectorType().cast(c2)).intoArray(lanes, 2 * L);
        ((FloatVector) F.vectorType().cast(c3)).intoArray(lanes, 3 * L);
    }
}
