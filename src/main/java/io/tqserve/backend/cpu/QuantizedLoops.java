package io.tqserve.backend.cpu;

import static io.tqserve.backend.cpu.QuantizedVector.F;
import static io.tqserve.backend.cpu.QuantizedVector.I;
import static io.tqserve.backend.cpu.QuantizedVector.L;
import static io.tqserve.backend.cpu.VectorKernels.LANES;
import static io.tqserve.backend.cpu.VectorKernels.LE;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;

/**
 * The inner loops of {@link QuantizedVector}'s kernels: each runs two weight rows of a call against the activations
 * in the kernels' order, one block of codes per step, and writes the two outputs ({@link #finish2}). The class comment
 * of {@link QuantizedVector} gives the arithmetic and why the loops are shaped as they are.
 *
 * <p>The accumulators are cast to the species' own vector class ({@code F.vectorType().cast}, which C2 folds into a
 * type check it can prove) before they are stored after the loop. Without the cast, {@code intoArray}'s calls on its
 * receiver were resolved from the type profile {@code intoArray} gathers across all its callers: when that profile
 * held exactly two vector classes (this class's 256-bit vectors and the prologue's 128-bit ones) C2 inlined both
 * behind a type test and boxed the accumulators on every step of the loop (docs/benchmarks-journal.md, "Why the
 * kernels look the way they do: a cause of the boxing"); with the cast the receiver's class is known when the call
 * is parsed.
 */
final class QuantizedLoops {
    /** Lanes [L/2, L): the second group of a 4-bit block that holds two groups ({@link QuantizedVector#span2}). */
    static final VectorMask<Float> HIGH = VectorMask.fromLong(F, ((1L << L) - 1) & -(1L << (L / 2)));

    private QuantizedLoops() {
    }

    /**
     * out[outOff+q] for q = q0, q0+1 (those below count): the fixed-order lane sum of the loop's accumulator
     * (lanes[(q-q0)·L..]) + the row's bias term.
     */
    static void finish2(float[] lanes, float[] sb, int groups, int q0, int count, float[] out, int outOff) {
        if (q0 < count) {
            out[outOff + q0] = VectorKernels.sumLanes(lanes, 0, L) + sb[4 * groups + q0];
        }
        if (q0 + 1 < count) {
            out[outOff + q0 + 1] = VectorKernels.sumLanes(lanes, L, L) + sb[4 * groups + q0 + 1];
        }
    }

    /**
     * The loop of the 4-bit kernels on two rows at byte offsets b0 and b0 + d1 of seg, each advancing {@code step}
     * bytes per load of L ints, rows q0 and q0 + 1 of the call's four (scales of block t at {@code sb[base + q·blocks + t]}: {@link QuantizedVector#scales};
     * bias terms after the groups' scales: {@link QuantizedVector#prologue}).
     * Two rows rather than four keep every operand of the loop in the 16 vector registers of AVX2: with four rows the
     * JIT spilled accumulators and loop invariants to the stack on every step, and how badly depended on the order in
     * which it compiled things (a twofold swing between runs of the same build). Each row's arithmetic is the same
     * whichever rows share the loop.
     */
    static void loop2Q4(MemorySegment seg, long b0, long d1, int n, int groups, int base, float[] x,
            int xOff, float[] sb, int q0, int count, float[] out, int outOff) {
        int blocks = n / (8 * L);
        long b1 = b0 + d1;
        int s0 = base + q0 * blocks;
        int s1 = s0 + blocks;
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        // the block index is the loop's counter, so the scale, activation and code reads are all linear in it and
        // their range checks leave the loop (a check left inside made the JIT box the accumulators on every step)
        for (int t = 0; t < blocks; t++) {
            int k = t * (8 * L);
            long off = t * (4L * L);
            IntVector v0 = IntVector.fromMemorySegment(I, seg, b0 + off, LE);
            IntVector v1 = IntVector.fromMemorySegment(I, seg, b1 + off, LE);
            FloatVector xv = FloatVector.fromArray(F, x, xOff + k);
            FloatVector e0 = ((FloatVector) v0.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).mul(xv);
            FloatVector e1 = ((FloatVector) v1.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).mul(xv);
            // codes 1..6 in a loop rather than written out: the JIT unrolls it, and the method's parsed graph stays
            // small enough that every vector operation is intrinsified (see QuantizedVector's class comment)
            for (int c = 1, mask = 0xF0; c < 7; c++, mask <<= 4) {
                xv = FloatVector.fromArray(F, x, xOff + k + c * L);
                e0 = ((FloatVector) v0.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0)).fma(xv, e0);
                e1 = ((FloatVector) v1.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            }
            xv = FloatVector.fromArray(F, x, xOff + k + 7 * L);
            e0 = ((FloatVector) v0.lanewise(VectorOperators.LSHR, 28).convert(VectorOperators.I2F, 0)).fma(xv, e0);
            e1 = ((FloatVector) v1.lanewise(VectorOperators.LSHR, 28).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            c0 = e0.fma(FloatVector.broadcast(F, sb[s0 + t]), c0);
            c1 = e1.fma(FloatVector.broadcast(F, sb[s1 + t]), c1);
        }
        float[] lanes = LANES.get();
        // typed as F's vector class first: see the class comment
        ((FloatVector) F.vectorType().cast(c0)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c1)).intoArray(lanes, L);
        finish2(lanes, sb, groups, q0, count, out, outOff);
    }

    /**
     * {@link #loop2Q4} where a block holds two groups ({@link QuantizedVector#span2}): the first group's scale on
     * lanes [0, L/2), the second's on [L/2, L), read from the prologue's layout ({@code sb[base + q·groups + g]},
     * base 0: {@link QuantizedVector#scales}). The products and sums are those of {@link #loop2Q4}; only the scale
     * vector is a blend of two broadcasts.
     */
    static void loop2Q4Span2(MemorySegment seg, long b0, long d1, int n, int groups, int base, float[] x,
            int xOff, float[] sb, int q0, int count, float[] out, int outOff) {
        int blocks = n / (8 * L);
        long b1 = b0 + d1;
        int s0 = base + q0 * groups;
        int s1 = s0 + groups;
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        // the block index is the loop's counter, so the scale, activation and code reads are all linear in it and
        // their range checks leave the loop (a check left inside made the JIT box the accumulators on every step)
        for (int t = 0; t < blocks; t++) {
            int k = t * (8 * L);
            long off = t * (4L * L);
            IntVector v0 = IntVector.fromMemorySegment(I, seg, b0 + off, LE);
            IntVector v1 = IntVector.fromMemorySegment(I, seg, b1 + off, LE);
            FloatVector xv = FloatVector.fromArray(F, x, xOff + k);
            FloatVector e0 = ((FloatVector) v0.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).mul(xv);
            FloatVector e1 = ((FloatVector) v1.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).mul(xv);
            // codes 1..6 in a loop rather than written out: the JIT unrolls it, and the method's parsed graph stays
            // small enough that every vector operation is intrinsified (see QuantizedVector's class comment)
            for (int c = 1, mask = 0xF0; c < 7; c++, mask <<= 4) {
                xv = FloatVector.fromArray(F, x, xOff + k + c * L);
                e0 = ((FloatVector) v0.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0)).fma(xv, e0);
                e1 = ((FloatVector) v1.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            }
            xv = FloatVector.fromArray(F, x, xOff + k + 7 * L);
            e0 = ((FloatVector) v0.lanewise(VectorOperators.LSHR, 28).convert(VectorOperators.I2F, 0)).fma(xv, e0);
            e1 = ((FloatVector) v1.lanewise(VectorOperators.LSHR, 28).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            c0 = e0.fma(FloatVector.broadcast(F, sb[s0 + 2 * t]).blend(FloatVector.broadcast(F, sb[s0 + 2 * t + 1]), HIGH), c0);
            c1 = e1.fma(FloatVector.broadcast(F, sb[s1 + 2 * t]).blend(FloatVector.broadcast(F, sb[s1 + 2 * t + 1]), HIGH), c1);
        }
        float[] lanes = LANES.get();
        // typed as F's vector class first: see the class comment
        ((FloatVector) F.vectorType().cast(c0)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c1)).intoArray(lanes, L);
        finish2(lanes, sb, groups, q0, count, out, outOff);
    }

    /**
     * {@link #loop2Q4} on a pair of rows repacked at load ({@link QuantizedPack#pack}): the second row's load follows
     * the first's. A copy rather than a stride parameter: the JIT hoists the codes' range check out of the loop only
     * when the stride is a constant, and a check left inside brings back the boxing described at {@link #loop2Q4}.
     */
    static void loop2Q4Packed(MemorySegment seg, long b0, int n, int groups, int base, float[] x,
            int xOff, float[] sb, int q0, int count, float[] out, int outOff) {
        int blocks = n / (8 * L);
        long b1 = b0 + 4L * L;
        int s0 = base + q0 * blocks;
        int s1 = s0 + blocks;
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        // the block index is the loop's counter, so the scale, activation and code reads are all linear in it and
        // their range checks leave the loop (a check left inside made the JIT box the accumulators on every step)
        for (int t = 0; t < blocks; t++) {
            int k = t * (8 * L);
            long off = t * (8L * L);
            IntVector v0 = IntVector.fromMemorySegment(I, seg, b0 + off, LE);
            IntVector v1 = IntVector.fromMemorySegment(I, seg, b1 + off, LE);
            FloatVector xv = FloatVector.fromArray(F, x, xOff + k);
            FloatVector e0 = ((FloatVector) v0.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).mul(xv);
            FloatVector e1 = ((FloatVector) v1.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).mul(xv);
            // codes 1..6 in a loop rather than written out: the JIT unrolls it, and the method's parsed graph stays
            // small enough that every vector operation is intrinsified (see QuantizedVector's class comment)
            for (int c = 1, mask = 0xF0; c < 7; c++, mask <<= 4) {
                xv = FloatVector.fromArray(F, x, xOff + k + c * L);
                e0 = ((FloatVector) v0.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0)).fma(xv, e0);
                e1 = ((FloatVector) v1.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            }
            xv = FloatVector.fromArray(F, x, xOff + k + 7 * L);
            e0 = ((FloatVector) v0.lanewise(VectorOperators.LSHR, 28).convert(VectorOperators.I2F, 0)).fma(xv, e0);
            e1 = ((FloatVector) v1.lanewise(VectorOperators.LSHR, 28).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            c0 = e0.fma(FloatVector.broadcast(F, sb[s0 + t]), c0);
            c1 = e1.fma(FloatVector.broadcast(F, sb[s1 + t]), c1);
        }
        float[] lanes = LANES.get();
        // typed as F's vector class first: see the class comment
        ((FloatVector) F.vectorType().cast(c0)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c1)).intoArray(lanes, L);
        finish2(lanes, sb, groups, q0, count, out, outOff);
    }

    /** {@link #loop2Q4Span2} on a pair of rows repacked at load, a copy for the reason given at {@link #loop2Q4Packed}. */
    static void loop2Q4Span2Packed(MemorySegment seg, long b0, int n, int groups, int base, float[] x,
            int xOff, float[] sb, int q0, int count, float[] out, int outOff) {
        int blocks = n / (8 * L);
        long b1 = b0 + 4L * L;
        int s0 = base + q0 * groups;
        int s1 = s0 + groups;
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        // the block index is the loop's counter, so the scale, activation and code reads are all linear in it and
        // their range checks leave the loop (a check left inside made the JIT box the accumulators on every step)
        for (int t = 0; t < blocks; t++) {
            int k = t * (8 * L);
            long off = t * (8L * L);
            IntVector v0 = IntVector.fromMemorySegment(I, seg, b0 + off, LE);
            IntVector v1 = IntVector.fromMemorySegment(I, seg, b1 + off, LE);
            FloatVector xv = FloatVector.fromArray(F, x, xOff + k);
            FloatVector e0 = ((FloatVector) v0.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).mul(xv);
            FloatVector e1 = ((FloatVector) v1.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).mul(xv);
            // codes 1..6 in a loop rather than written out: the JIT unrolls it, and the method's parsed graph stays
            // small enough that every vector operation is intrinsified (see QuantizedVector's class comment)
            for (int c = 1, mask = 0xF0; c < 7; c++, mask <<= 4) {
                xv = FloatVector.fromArray(F, x, xOff + k + c * L);
                e0 = ((FloatVector) v0.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0)).fma(xv, e0);
                e1 = ((FloatVector) v1.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            }
            xv = FloatVector.fromArray(F, x, xOff + k + 7 * L);
            e0 = ((FloatVector) v0.lanewise(VectorOperators.LSHR, 28).convert(VectorOperators.I2F, 0)).fma(xv, e0);
            e1 = ((FloatVector) v1.lanewise(VectorOperators.LSHR, 28).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            c0 = e0.fma(FloatVector.broadcast(F, sb[s0 + 2 * t]).blend(FloatVector.broadcast(F, sb[s0 + 2 * t + 1]), HIGH), c0);
            c1 = e1.fma(FloatVector.broadcast(F, sb[s1 + 2 * t]).blend(FloatVector.broadcast(F, sb[s1 + 2 * t + 1]), HIGH), c1);
        }
        float[] lanes = LANES.get();
        // typed as F's vector class first: see the class comment
        ((FloatVector) F.vectorType().cast(c0)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c1)).intoArray(lanes, L);
        finish2(lanes, sb, groups, q0, count, out, outOff);
    }

    /**
     * The loop of the 8-bit kernels on two rows at byte offsets b0 and b0 + d1 of seg, each advancing {@code step}
     * bytes per load of L ints, rows q0 and q0 + 1 of the call's four (scales of block t at {@code sb[base + q·blocks + t]}: {@link QuantizedVector#scales};
     * bias terms after the groups' scales: {@link QuantizedVector#prologue}).
     * Two rows rather than four keep every operand of the loop in the 16 vector registers of AVX2: with four rows the
     * JIT spilled accumulators and loop invariants to the stack on every step, and how badly depended on the order in
     * which it compiled things (a twofold swing between runs of the same build). Each row's arithmetic is the same
     * whichever rows share the loop.
     */
    static void loop2Q8(MemorySegment seg, long b0, long d1, int n, int groups, int base, float[] x,
            int xOff, float[] sb, int q0, int count, float[] out, int outOff) {
        int blocks = n / (4 * L);
        long b1 = b0 + d1;
        int s0 = base + q0 * blocks;
        int s1 = s0 + blocks;
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        // the block index is the loop's counter, so the scale, activation and code reads are all linear in it and
        // their range checks leave the loop (a check left inside made the JIT box the accumulators on every step)
        for (int t = 0; t < blocks; t++) {
            int k = t * (4 * L);
            long off = t * (4L * L);
            IntVector v0 = IntVector.fromMemorySegment(I, seg, b0 + off, LE);
            IntVector v1 = IntVector.fromMemorySegment(I, seg, b1 + off, LE);
            // the first multiply is a multiply-add into zero (the same bits) so that all three masked codes share the
            // loop, which the JIT compiles without boxing the accumulators (written out, it did not; see loop2Q4)
            FloatVector e0 = FloatVector.zero(F);
            FloatVector e1 = FloatVector.zero(F);
            FloatVector xv;
            for (int c = 0, mask = 0xFF; c < 3; c++, mask <<= 8) {
                xv = FloatVector.fromArray(F, x, xOff + k + c * L);
                e0 = ((FloatVector) v0.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0)).fma(xv, e0);
                e1 = ((FloatVector) v1.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            }
            xv = FloatVector.fromArray(F, x, xOff + k + 3 * L);
            e0 = ((FloatVector) v0.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0)).fma(xv, e0);
            e1 = ((FloatVector) v1.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            c0 = e0.fma(FloatVector.broadcast(F, sb[s0 + t]), c0);
            c1 = e1.fma(FloatVector.broadcast(F, sb[s1 + t]), c1);
        }
        float[] lanes = LANES.get();
        // typed as F's vector class first: see the class comment
        ((FloatVector) F.vectorType().cast(c0)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c1)).intoArray(lanes, L);
        finish2(lanes, sb, groups, q0, count, out, outOff);
    }

    /** {@link #loop2Q8} on a pair of rows repacked at load, a copy for the reason given at {@link #loop2Q4Packed}. */
    static void loop2Q8Packed(MemorySegment seg, long b0, int n, int groups, int base, float[] x,
            int xOff, float[] sb, int q0, int count, float[] out, int outOff) {
        int blocks = n / (4 * L);
        long b1 = b0 + 4L * L;
        int s0 = base + q0 * blocks;
        int s1 = s0 + blocks;
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        // the block index is the loop's counter, so the scale, activation and code reads are all linear in it and
        // their range checks leave the loop (a check left inside made the JIT box the accumulators on every step)
        for (int t = 0; t < blocks; t++) {
            int k = t * (4 * L);
            long off = t * (8L * L);
            IntVector v0 = IntVector.fromMemorySegment(I, seg, b0 + off, LE);
            IntVector v1 = IntVector.fromMemorySegment(I, seg, b1 + off, LE);
            // the first multiply is a multiply-add into zero (the same bits) so that all three masked codes share the
            // loop, which the JIT compiles without boxing the accumulators (written out, it did not; see loop2Q4)
            FloatVector e0 = FloatVector.zero(F);
            FloatVector e1 = FloatVector.zero(F);
            FloatVector xv;
            for (int c = 0, mask = 0xFF; c < 3; c++, mask <<= 8) {
                xv = FloatVector.fromArray(F, x, xOff + k + c * L);
                e0 = ((FloatVector) v0.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0)).fma(xv, e0);
                e1 = ((FloatVector) v1.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            }
            xv = FloatVector.fromArray(F, x, xOff + k + 3 * L);
            e0 = ((FloatVector) v0.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0)).fma(xv, e0);
            e1 = ((FloatVector) v1.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            c0 = e0.fma(FloatVector.broadcast(F, sb[s0 + t]), c0);
            c1 = e1.fma(FloatVector.broadcast(F, sb[s1 + t]), c1);
        }
        float[] lanes = LANES.get();
        // typed as F's vector class first: see the class comment
        ((FloatVector) F.vectorType().cast(c0)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c1)).intoArray(lanes, L);
        finish2(lanes, sb, groups, q0, count, out, outOff);
    }
}
