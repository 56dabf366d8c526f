package io.tqserve.backend.cpu;

import static io.tqserve.backend.cpu.VectorKernels.F;
import static io.tqserve.backend.cpu.VectorKernels.I;
import static io.tqserve.backend.cpu.VectorKernels.L;
import static io.tqserve.backend.cpu.VectorKernels.LANES;
import static io.tqserve.backend.cpu.VectorKernels.LE;
import static io.tqserve.backend.cpu.VectorKernels.sumLanes;

import io.tqserve.backend.DType;
import io.tqserve.backend.GroupQuant;
import io.tqserve.backend.Layouts;
import io.tqserve.backend.Matrix;
import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;

/**
 * Vector API kernels for group-affine 4-bit and 8-bit weights ({@link GroupQuant}): the codes are widened in
 * registers straight from the packed bytes, so a decode step streams each packed byte once and no dense copy of the
 * matrix ever exists. The scalar twin is {@link QuantizedScalar}; {@link QuantizedMatmul} chooses between them.
 *
 * <p>The affine form is factored per group: {@code Σ (s·q + b)·x = s·Σ q·x + b·Σ x}, so the inner loop is one
 * multiply-add per weight on the integer codes (as cheap as the bf16 kernel's), the scale is applied once per
 * group (a vector multiply-add into the row's accumulator) and the bias once per group against the group's sum of
 * x, computed once per activation row ({@link #groupSums}). Dequantizing every weight first cost a second
 * multiply-add per weight and made the kernels compute-bound at half the bf16 speed on the development machine.
 *
 * <p>A load takes L little-endian ints, each holding P = 32/bits codes (code k of int j is column j·P + k of the
 * block); rather than interleave the codes again, the kernels work in their load order: within each block of P·L
 * columns, column j·P + k sits at position k·L + j. The activations are permuted into that order once per
 * matmul ({@link #permute}). A batch of activation rows runs the same kernel per row against each block of four
 * weight rows (which then stays in the L1 cache), so every output has the same arithmetic whatever the batch and
 * batching never changes a result (as with the bf16 kernels). Straight-line code for the reason given in
 * {@link VectorKernels}.
 */
final class QuantizedVector {
    /** The kernels need 256-bit or wider vectors (their blocks of P·L columns fit the group sizes then). */
    static final boolean WIDE = F.vectorBitSize() >= 256;

    private QuantizedVector() {
    }

    /** Scale or bias i, the bf16 case read inline (a call per group through DType.read cost a third of the time). */
    static float sc(MemorySegment m, DType t, long i) {
        return t == DType.BF16 ? Float.intBitsToFloat((m.getAtIndex(Layouts.SHORT_LE, i) & 0xFFFF) << 16) : t.read(m, i);
    }

    /**
     * Columns per block of the kernels' order: one load of L ints, 8L codes at 4 bits, 4L at 8 bits. A group must
     * hold whole blocks (4 bits on 256-bit vectors: groups of 64 or 128; narrower groups take the scalar path).
     */
    static int block(int bits) {
        return bits == 4 ? 8 * L : 4 * L;
    }

    /** Whether these kernels handle w: 4 or 8 bits, vectors of 256 bits or more, groups of whole blocks. */
    static boolean handles(Matrix w) {
        GroupQuant q = w.quant();
        return WIDE && q != null && (q.bits() == 4 || q.bits() == 8) && q.groupSize() % block(q.bits()) == 0;
    }

    /**
     * dst[dOff..dOff+n) = x[xOff..xOff+n) in the kernels' order for {@code bits}: within each block, column
     * {@code j·P + k} (code k of int j, P = 32/bits codes per int) moves to {@code k·L + j}.
     */
    static void permute(int bits, float[] x, int xOff, int n, float[] dst, int dOff) {
        int per = 32 / bits;
        int blk = block(bits);
        for (int b = 0; b < n; b += blk) {
            for (int j = 0; j < L; j++) {
                for (int k = 0; k < per; k++) {
                    dst[dOff + b + k * L + j] = x[xOff + b + j * per + k];
                }
            }
        }
    }

    /**
     * Up to four 4-bit rows of w (row .. row+count-1) times x (already in the nibble order: {@link #permute}), with
     * {@code xsum[xsOff + g]} the sum of x over group g: out[outOff+q] = row (row+q) · x. See the class comment for
     * the arithmetic. Rows beyond count are computed on a copy of the last one and not written.
     */
    static void matvecQ4(Matrix w, int row, int count, float[] x, int xOff, float[] xsum, int xsOff, float[] out,
            int outOff) {
        GroupQuant q = w.quant();
        int n = w.cols();
        int gs = q.groupSize();
        int groups = n / gs;
        MemorySegment seg = w.data();
        MemorySegment ss = q.scales();
        MemorySegment bs = q.biases();
        DType st = q.scaleType();
        long rb = q.rowBytes(n);
        int r0 = row;
        int r1 = row + Math.min(1, count - 1);
        int r2 = row + Math.min(2, count - 1);
        int r3 = row + Math.min(3, count - 1);
        long b0 = r0 * rb;
        long b1 = r1 * rb;
        long b2 = r2 * rb;
        long b3 = r3 * rb;
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        FloatVector c2 = FloatVector.zero(F);
        FloatVector c3 = FloatVector.zero(F);
        float z0 = 0;
        float z1 = 0;
        float z2 = 0;
        float z3 = 0;
        for (int g = 0; g < groups; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = FloatVector.zero(F);
            FloatVector a2 = FloatVector.zero(F);
            FloatVector a3 = FloatVector.zero(F);
            int end = (g + 1) * gs;
            for (int k = g * gs; k < end; k += 8 * L) {
                FloatVector x0 = FloatVector.fromArray(F, x, xOff + k + 0 * L);
                FloatVector x1 = FloatVector.fromArray(F, x, xOff + k + 1 * L);
                FloatVector x2 = FloatVector.fromArray(F, x, xOff + k + 2 * L);
                FloatVector x3 = FloatVector.fromArray(F, x, xOff + k + 3 * L);
                FloatVector x4 = FloatVector.fromArray(F, x, xOff + k + 4 * L);
                FloatVector x5 = FloatVector.fromArray(F, x, xOff + k + 5 * L);
                FloatVector x6 = FloatVector.fromArray(F, x, xOff + k + 6 * L);
                FloatVector x7 = FloatVector.fromArray(F, x, xOff + k + 7 * L);
                IntVector v;
                v = IntVector.fromMemorySegment(I, seg, b0 + k / 2, LE);
                a0 = ((FloatVector) v.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x0, a0);
                a0 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 4).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x1, a0);
                a0 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 8).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x2, a0);
                a0 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 12).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x3, a0);
                a0 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 16).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x4, a0);
                a0 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 20).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x5, a0);
                a0 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 24).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x6, a0);
                a0 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 28).convert(VectorOperators.I2F, 0)).fma(x7, a0);
                v = IntVector.fromMemorySegment(I, seg, b1 + k / 2, LE);
                a1 = ((FloatVector) v.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x0, a1);
                a1 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 4).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x1, a1);
                a1 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 8).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x2, a1);
                a1 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 12).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x3, a1);
                a1 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 16).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x4, a1);
                a1 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 20).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x5, a1);
                a1 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 24).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x6, a1);
                a1 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 28).convert(VectorOperators.I2F, 0)).fma(x7, a1);
                v = IntVector.fromMemorySegment(I, seg, b2 + k / 2, LE);
                a2 = ((FloatVector) v.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x0, a2);
                a2 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 4).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x1, a2);
                a2 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 8).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x2, a2);
                a2 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 12).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x3, a2);
                a2 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 16).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x4, a2);
                a2 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 20).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x5, a2);
                a2 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 24).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x6, a2);
                a2 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 28).convert(VectorOperators.I2F, 0)).fma(x7, a2);
                v = IntVector.fromMemorySegment(I, seg, b3 + k / 2, LE);
                a3 = ((FloatVector) v.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x0, a3);
                a3 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 4).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x1, a3);
                a3 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 8).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x2, a3);
                a3 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 12).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x3, a3);
                a3 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 16).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x4, a3);
                a3 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 20).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x5, a3);
                a3 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 24).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(x6, a3);
                a3 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 28).convert(VectorOperators.I2F, 0)).fma(x7, a3);
            }
            c0 = a0.fma(FloatVector.broadcast(F, sc(ss, st, (long) r0 * groups + g)), c0);
            c1 = a1.fma(FloatVector.broadcast(F, sc(ss, st, (long) r1 * groups + g)), c1);
            c2 = a2.fma(FloatVector.broadcast(F, sc(ss, st, (long) r2 * groups + g)), c2);
            c3 = a3.fma(FloatVector.broadcast(F, sc(ss, st, (long) r3 * groups + g)), c3);
            float xg = xsum[xsOff + g];
            z0 = Math.fma(sc(bs, st, (long) r0 * groups + g), xg, z0);
            z1 = Math.fma(sc(bs, st, (long) r1 * groups + g), xg, z1);
            z2 = Math.fma(sc(bs, st, (long) r2 * groups + g), xg, z2);
            z3 = Math.fma(sc(bs, st, (long) r3 * groups + g), xg, z3);
        }
        float[] lanes = LANES.get();
        c0.intoArray(lanes, 0);
        c1.intoArray(lanes, L);
        c2.intoArray(lanes, 2 * L);
        c3.intoArray(lanes, 3 * L);
        out[outOff] = sumLanes(lanes, 0) + z0; // fixed-order lane sums
        if (count > 1) {
            out[outOff + 1] = sumLanes(lanes, L) + z1;
        }
        if (count > 2) {
            out[outOff + 2] = sumLanes(lanes, 2 * L) + z2;
        }
        if (count > 3) {
            out[outOff + 3] = sumLanes(lanes, 3 * L) + z3;
        }
    }

    /** As {@link #matvecQ4}, for 8-bit rows (x in the byte order: {@link #permute}). */
    static void matvecQ8(Matrix w, int row, int count, float[] x, int xOff, float[] xsum, int xsOff, float[] out,
            int outOff) {
        GroupQuant q = w.quant();
        int n = w.cols();
        int gs = q.groupSize();
        int groups = n / gs;
        MemorySegment seg = w.data();
        MemorySegment ss = q.scales();
        MemorySegment bs = q.biases();
        DType st = q.scaleType();
        long rb = n;
        int r0 = row;
        int r1 = row + Math.min(1, count - 1);
        int r2 = row + Math.min(2, count - 1);
        int r3 = row + Math.min(3, count - 1);
        long b0 = r0 * rb;
        long b1 = r1 * rb;
        long b2 = r2 * rb;
        long b3 = r3 * rb;
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        FloatVector c2 = FloatVector.zero(F);
        FloatVector c3 = FloatVector.zero(F);
        float z0 = 0;
        float z1 = 0;
        float z2 = 0;
        float z3 = 0;
        for (int g = 0; g < groups; g++) {
            FloatVector a0 = FloatVector.zero(F);
            FloatVector a1 = FloatVector.zero(F);
            FloatVector a2 = FloatVector.zero(F);
            FloatVector a3 = FloatVector.zero(F);
            int end = (g + 1) * gs;
            for (int k = g * gs; k < end; k += 4 * L) {
                FloatVector x0 = FloatVector.fromArray(F, x, xOff + k);
                FloatVector x1 = FloatVector.fromArray(F, x, xOff + k + L);
                FloatVector x2 = FloatVector.fromArray(F, x, xOff + k + 2 * L);
                FloatVector x3 = FloatVector.fromArray(F, x, xOff + k + 3 * L);
                IntVector v;
                v = IntVector.fromMemorySegment(I, seg, b0 + k, LE);
                a0 = ((FloatVector) v.lanewise(VectorOperators.AND, 0xFF).convert(VectorOperators.I2F, 0)).fma(x0, a0);
                a0 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 8).lanewise(VectorOperators.AND, 0xFF).convert(VectorOperators.I2F, 0)).fma(x1, a0);
                a0 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 16).lanewise(VectorOperators.AND, 0xFF).convert(VectorOperators.I2F, 0)).fma(x2, a0);
                a0 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0)).fma(x3, a0);
                v = IntVector.fromMemorySegment(I, seg, b1 + k, LE);
                a1 = ((FloatVector) v.lanewise(VectorOperators.AND, 0xFF).convert(VectorOperators.I2F, 0)).fma(x0, a1);
                a1 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 8).lanewise(VectorOperators.AND, 0xFF).convert(VectorOperators.I2F, 0)).fma(x1, a1);
                a1 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 16).lanewise(VectorOperators.AND, 0xFF).convert(VectorOperators.I2F, 0)).fma(x2, a1);
                a1 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0)).fma(x3, a1);
                v = IntVector.fromMemorySegment(I, seg, b2 + k, LE);
                a2 = ((FloatVector) v.lanewise(VectorOperators.AND, 0xFF).convert(VectorOperators.I2F, 0)).fma(x0, a2);
                a2 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 8).lanewise(VectorOperators.AND, 0xFF).convert(VectorOperators.I2F, 0)).fma(x1, a2);
                a2 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 16).lanewise(VectorOperators.AND, 0xFF).convert(VectorOperators.I2F, 0)).fma(x2, a2);
                a2 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0)).fma(x3, a2);
                v = IntVector.fromMemorySegment(I, seg, b3 + k, LE);
                a3 = ((FloatVector) v.lanewise(VectorOperators.AND, 0xFF).convert(VectorOperators.I2F, 0)).fma(x0, a3);
                a3 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 8).lanewise(VectorOperators.AND, 0xFF).convert(VectorOperators.I2F, 0)).fma(x1, a3);
                a3 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 16).lanewise(VectorOperators.AND, 0xFF).convert(VectorOperators.I2F, 0)).fma(x2, a3);
                a3 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0)).fma(x3, a3);
            }
            c0 = a0.fma(FloatVector.broadcast(F, sc(ss, st, (long) r0 * groups + g)), c0);
            c1 = a1.fma(FloatVector.broadcast(F, sc(ss, st, (long) r1 * groups + g)), c1);
            c2 = a2.fma(FloatVector.broadcast(F, sc(ss, st, (long) r2 * groups + g)), c2);
            c3 = a3.fma(FloatVector.broadcast(F, sc(ss, st, (long) r3 * groups + g)), c3);
            float xg = xsum[xsOff + g];
            z0 = Math.fma(sc(bs, st, (long) r0 * groups + g), xg, z0);
            z1 = Math.fma(sc(bs, st, (long) r1 * groups + g), xg, z1);
            z2 = Math.fma(sc(bs, st, (long) r2 * groups + g), xg, z2);
            z3 = Math.fma(sc(bs, st, (long) r3 * groups + g), xg, z3);
        }
        float[] lanes = LANES.get();
        c0.intoArray(lanes, 0);
        c1.intoArray(lanes, L);
        c2.intoArray(lanes, 2 * L);
        c3.intoArray(lanes, 3 * L);
        out[outOff] = sumLanes(lanes, 0) + z0; // fixed-order lane sums
        if (count > 1) {
            out[outOff + 1] = sumLanes(lanes, L) + z1;
        }
        if (count > 2) {
            out[outOff + 2] = sumLanes(lanes, 2 * L) + z2;
        }
        if (count > 3) {
            out[outOff + 3] = sumLanes(lanes, 3 * L) + z3;
        }
    }

    /** Per group of x[xOff..xOff+n) (column order), its sum in column order, into xsum[xsOff..]. */
    static void groupSums(float[] x, int xOff, int n, int groupSize, float[] xsum, int xsOff) {
        for (int g = 0; g < n / groupSize; g++) {
            float sum = 0;
            for (int i = xOff + g * groupSize, end = i + groupSize; i < end; i++) {
                sum += x[i];
            }
            xsum[xsOff + g] = sum;
        }
    }
}
