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
 * The float loops of {@link QuantizedVector} for 8-bit codes whose groups hold two blocks ({@link #applies}: groups of
 * 64 on 256-bit vectors, mlx-community's default, or 32 on 128-bit ones): one step per group, the two blocks' codes
 * multiplied into one chain of eight multiply-adds and the group's scale applied once, where
 * {@link QuantizedLoops#loop2Q8} applies the (repeated) scale once per block. That saves a broadcast and a
 * multiply-add per block and row, and each step issues the loads of both blocks of both rows (two cache lines):
 * measured on one AMD EPYC Zen 4 core, 5632×2048 matrices repacked, bf16 scales, thread CPU time, interleaved with
 * the per-block loop in one JVM, G weights/s: from memory 12.8–13.6 against 10.8–12.3, from L2 the same 14.9 (the
 * gain is in the memory stream); through {@link CpuBackend#matmul} about 1.07x (docs/benchmarks-journal.md,
 * 2026-12-04 18:45 UTC, "8-bit groups in one step").
 *
 * <p>The arithmetic per row: {@code Σ_g s_g · Σ_{c in g} q_c·x_c + Σ_g b_g·Σx_g}, the inner sum a chain over the
 * group's two blocks (codes 0..3 of the first block's ints, then of the second's, in the kernels' activation order),
 * starting as a multiply-add into zero as the per-block loop's does. The mapped loop, the repacked one and the
 * four-activation-row tile ({@link #tile}, for {@link QuantizedRows}) perform the same operations in the same order,
 * so an output has the same bits on either layout and in any batch.
 */
final class QuantizedGroup8 {
    private QuantizedGroup8() {
    }

    /** Whether 8-bit codes in groups of {@code groupSize} take these loops: two blocks of {@code 4·L} columns each. */
    static boolean applies(int bits, int groupSize) {
        return bits == 8 && groupSize == 2 * QuantizedVector.block(8);
    }

    /**
     * Two rows at byte offsets b0 and b0 + d1 of the stored layout (a row's blocks contiguous, {@code 4·L} bytes
     * each), rows q0 and q0 + 1 of the call (scale of group g of call row q at {@code sb[q·groups + g]}, bias terms
     * after: {@link QuantizedVector#prologue}).
     */
    static void loop2(MemorySegment seg, long b0, long d1, int groups, float[] x, int xOff, float[] sb, int q0,
            int count, float[] out, int outOff) {
        long b1 = b0 + d1;
        int s0 = q0 * groups;
        int s1 = s0 + groups;
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        // the group index is the loop's counter, so every read is linear in it and its range check leaves the loop
        for (int g = 0; g < groups; g++) {
            int k = xOff + g * (8 * L);
            long off = g * (8L * L);
            IntVector v0 = IntVector.fromMemorySegment(I, seg, b0 + off, LE);
            IntVector v1 = IntVector.fromMemorySegment(I, seg, b1 + off, LE);
            IntVector u0 = IntVector.fromMemorySegment(I, seg, b0 + off + 4L * L, LE);
            IntVector u1 = IntVector.fromMemorySegment(I, seg, b1 + off + 4L * L, LE);
            FloatVector e0 = FloatVector.zero(F);
            FloatVector e1 = FloatVector.zero(F);
            FloatVector xv;
            for (int c = 0, mask = 0xFF; c < 3; c++, mask <<= 8) {
                xv = FloatVector.fromArray(F, x, k + c * L);
                e0 = ((FloatVector) v0.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0)).fma(xv, e0);
                e1 = ((FloatVector) v1.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            }
            xv = FloatVector.fromArray(F, x, k + 3 * L);
            e0 = ((FloatVector) v0.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0)).fma(xv, e0);
            e1 = ((FloatVector) v1.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            for (int c = 0, mask = 0xFF; c < 3; c++, mask <<= 8) {
                xv = FloatVector.fromArray(F, x, k + (4 + c) * L);
                e0 = ((FloatVector) u0.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0)).fma(xv, e0);
                e1 = ((FloatVector) u1.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            }
            xv = FloatVector.fromArray(F, x, k + 7 * L);
            e0 = ((FloatVector) u0.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0)).fma(xv, e0);
            e1 = ((FloatVector) u1.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            c0 = e0.fma(FloatVector.broadcast(F, sb[s0 + g]), c0);
            c1 = e1.fma(FloatVector.broadcast(F, sb[s1 + g]), c1);
        }
        float[] lanes = LANES.get();
        // typed as F's vector class first: QuantizedLoops' class comment
        ((FloatVector) F.vectorType().cast(c0)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c1)).intoArray(lanes, L);
        QuantizedLoops.finish2(lanes, sb, groups, q0, count, out, outOff);
    }

    /**
     * {@link #loop2} on a pair of rows repacked at load ({@link QuantizedPack}: per block row 0's {@code 4·L} bytes,
     * then row 1's); a copy rather than a stride parameter for the reason given at {@link QuantizedLoops#loop2Q4Packed}.
     */
    static void loop2Packed(MemorySegment seg, long b0, int groups, float[] x, int xOff, float[] sb, int q0,
            float[] out, int outOff) {
        long b1 = b0 + 4L * L;
        int s0 = q0 * groups;
        int s1 = s0 + groups;
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        for (int g = 0; g < groups; g++) {
            int k = xOff + g * (8 * L);
            long off = g * (16L * L);
            IntVector v0 = IntVector.fromMemorySegment(I, seg, b0 + off, LE);
            IntVector v1 = IntVector.fromMemorySegment(I, seg, b1 + off, LE);
            IntVector u0 = IntVector.fromMemorySegment(I, seg, b0 + off + 8L * L, LE);
            IntVector u1 = IntVector.fromMemorySegment(I, seg, b1 + off + 8L * L, LE);
            FloatVector e0 = FloatVector.zero(F);
            FloatVector e1 = FloatVector.zero(F);
            FloatVector xv;
            for (int c = 0, mask = 0xFF; c < 3; c++, mask <<= 8) {
                xv = FloatVector.fromArray(F, x, k + c * L);
                e0 = ((FloatVector) v0.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0)).fma(xv, e0);
                e1 = ((FloatVector) v1.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            }
            xv = FloatVector.fromArray(F, x, k + 3 * L);
            e0 = ((FloatVector) v0.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0)).fma(xv, e0);
            e1 = ((FloatVector) v1.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            for (int c = 0, mask = 0xFF; c < 3; c++, mask <<= 8) {
                xv = FloatVector.fromArray(F, x, k + (4 + c) * L);
                e0 = ((FloatVector) u0.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0)).fma(xv, e0);
                e1 = ((FloatVector) u1.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            }
            xv = FloatVector.fromArray(F, x, k + 7 * L);
            e0 = ((FloatVector) u0.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0)).fma(xv, e0);
            e1 = ((FloatVector) u1.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            c0 = e0.fma(FloatVector.broadcast(F, sb[s0 + g]), c0);
            c1 = e1.fma(FloatVector.broadcast(F, sb[s1 + g]), c1);
        }
        float[] lanes = LANES.get();
        // typed as F's vector class first: QuantizedLoops' class comment
        ((FloatVector) F.vectorType().cast(c0)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c1)).intoArray(lanes, L);
        QuantizedLoops.finish2(lanes, sb, groups, q0, 4, out, outOff);
    }

    /**
     * One repacked weight row (its first block at byte offset b0, blocks every {@code 8·L} bytes) against the four
     * activation rows at x[xOff], x[xOff + n], ...: per activation row exactly the operations of {@link #loop2Packed}
     * (scale of group g at {@code sb[s + g]}), the four accumulators to lanes[0..4L).
     */
    static void tile(MemorySegment seg, long b0, int n, int s, float[] x, int xOff, float[] sb, float[] lanes) {
        int groups = n / (8 * L);
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        FloatVector c2 = FloatVector.zero(F);
        FloatVector c3 = FloatVector.zero(F);
        for (int g = 0; g < groups; g++) {
            int k = xOff + g * (8 * L);
            long off = b0 + g * (16L * L);
            FloatVector e0 = FloatVector.zero(F);
            FloatVector e1 = FloatVector.zero(F);
            FloatVector e2 = FloatVector.zero(F);
            FloatVector e3 = FloatVector.zero(F);
            // the group's two blocks, h = 0 then 1: the order of loop2Packed's chain
            for (int h = 0; h < 2; h++) {
                IntVector v = IntVector.fromMemorySegment(I, seg, off + h * (8L * L), LE);
                int kh = k + h * (4 * L);
                FloatVector f;
                for (int c = 0, mask = 0xFF; c < 3; c++, mask <<= 8) {
                    f = (FloatVector) v.lanewise(VectorOperators.AND, mask).convert(VectorOperators.I2F, 0);
                    int kc = kh + c * L;
                    e0 = f.fma(FloatVector.fromArray(F, x, kc), e0);
                    e1 = f.fma(FloatVector.fromArray(F, x, kc + n), e1);
                    e2 = f.fma(FloatVector.fromArray(F, x, kc + 2 * n), e2);
                    e3 = f.fma(FloatVector.fromArray(F, x, kc + 3 * n), e3);
                }
                f = (FloatVector) v.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0);
                int k3 = kh + 3 * L;
                e0 = f.fma(FloatVector.fromArray(F, x, k3), e0);
                e1 = f.fma(FloatVector.fromArray(F, x, k3 + n), e1);
                e2 = f.fma(FloatVector.fromArray(F, x, k3 + 2 * n), e2);
                e3 = f.fma(FloatVector.fromArray(F, x, k3 + 3 * n), e3);
            }
            FloatVector scale = FloatVector.broadcast(F, sb[s + g]);
            c0 = e0.fma(scale, c0);
            c1 = e1.fma(scale, c1);
            c2 = e2.fma(scale, c2);
            c3 = e3.fma(scale, c3);
        }
        // typed as F's vector class first (QuantizedLoops' class comment)
        ((FloatVector) F.vectorType().cast(c0)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c1)).intoArray(lanes, L);
        ((FloatVector) F.vectorType().cast(c2)).intoArray(lanes, 2 * L);
        ((FloatVector) F.vectorType().cast(c3)).intoArray(lanes, 3 * L);
    }
}
