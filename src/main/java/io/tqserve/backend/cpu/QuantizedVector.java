package io.tqserve.backend.cpu;

import static io.tqserve.backend.cpu.VectorKernels.F;
import static io.tqserve.backend.cpu.VectorKernels.I;
import static io.tqserve.backend.cpu.VectorKernels.L;
import static io.tqserve.backend.cpu.VectorKernels.LANES;
import static io.tqserve.backend.cpu.VectorKernels.LE;
import static io.tqserve.backend.cpu.VectorKernels.sumLanes;

import io.tqserve.backend.GroupQuant;
import io.tqserve.backend.Matrix;
import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * Vector API kernels for group-affine 4-bit and 8-bit weights ({@link GroupQuant}): the codes are widened and
 * dequantized in registers ({@code scale·q + bias}, one fused multiply-add) straight from the packed bytes, so a
 * decode step streams each packed byte once and no dense copy of the matrix ever exists. The scalar twin is
 * {@link QuantizedScalar}; {@link QuantizedMatmul} chooses between them.
 *
 * <p>8-bit codes are used in column order. 4-bit codes come two to a byte (low nibble = even column), so a load of
 * L bytes yields the L even columns and the L odd columns of a block of 2L columns; rather than interleave them
 * again, the kernels work in the <em>nibble order</em>: within each block of 2L columns, the even columns first,
 * then the odd ones. The activations are permuted into that order once per matmul ({@link #permute4}), the matvec
 * reads the weights in it, and the batched path decodes weight rows into it ({@link #decodeRows}) and runs the
 * float tiles of {@link VectorMatmul}. Every output has one accumulator stepping through the same order with the same
 * multiply-adds whichever path computes it, so batching never changes a result (as with the bf16 kernels).
 * Straight-line code for the reason given in {@link VectorKernels}.
 */
final class QuantizedVector {
    /** Bytes with as many lanes as F: a quarter of its bit size. */
    static final VectorSpecies<Byte> B = F.vectorBitSize() >= 256
            ? VectorSpecies.of(byte.class, VectorShape.forBitSize(F.vectorBitSize() / 4)) : null;

    private QuantizedVector() {
    }

    /** Whether these kernels handle w: 4 or 8 bits, vectors of 256 bits or more, groups of whole 2L-column blocks. */
    static boolean handles(Matrix w) {
        GroupQuant q = w.quant();
        return B != null && q != null && (q.bits() == 4 || q.bits() == 8) && q.groupSize() % (2 * L) == 0;
    }

    /** Whether w's kernels work in the nibble order (4 bits), so activations must be permuted. */
    static boolean nibbleOrder(Matrix w) {
        return w.quant().bits() == 4;
    }

    /** dst[dOff..dOff+n) = x[xOff..xOff+n) in the nibble order (n a multiple of 2L). */
    static void permute4(float[] x, int xOff, int n, float[] dst, int dOff) {
        for (int b = 0; b < n; b += 2 * L) {
            for (int m = 0; m < L; m++) {
                dst[dOff + b + m] = x[xOff + b + 2 * m];
                dst[dOff + b + L + m] = x[xOff + b + 2 * m + 1];
            }
        }
    }

    /** Rows row..row+count-1 of w dequantized to floats at dst + q·cols, in the kernels' order. */
    static void decodeRows(Matrix w, int row, int count, float[] dst) {
        GroupQuant q = w.quant();
        int n = w.cols();
        int gs = q.groupSize();
        int groups = n / gs;
        MemorySegment seg = w.data();
        long rowBytes = q.rowBytes(n);
        for (int r = 0; r < count; r++) {
            long base = (row + r) * rowBytes;
            int d = r * n;
            for (int g = 0; g < groups; g++) {
                FloatVector sv = FloatVector.broadcast(F, q.scale(row + r, g, groups));
                FloatVector bv = FloatVector.broadcast(F, q.bias(row + r, g, groups));
                int end = (g + 1) * gs;
                if (q.bits() == 4) {
                    for (int k = g * gs; k < end; k += 2 * L) {
                        IntVector v = (IntVector) ByteVector.fromMemorySegment(B, seg, base + k / 2, LE).convertShape(VectorOperators.B2I, I, 0);
                        ((FloatVector) v.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(sv, bv).intoArray(dst, d + k);
                        ((FloatVector) v.lanewise(VectorOperators.LSHR, 4).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(sv, bv).intoArray(dst, d + k + L);
                    }
                } else {
                    for (int k = g * gs; k < end; k += L) {
                        ((FloatVector) ((IntVector) ByteVector.fromMemorySegment(B, seg, base + k, LE).convertShape(VectorOperators.B2I, I, 0)).lanewise(VectorOperators.AND, 0xFF).convert(VectorOperators.I2F, 0)).fma(sv, bv).intoArray(dst, d + k);
                    }
                }
            }
        }
    }

    /** Four 4-bit rows of w times x (already in the nibble order): out[outOff+q] = row (row+q) · x. */
    static void matvec4Q4(Matrix w, int row, float[] x, int xOff, float[] out, int outOff) {
        GroupQuant q = w.quant();
        int n = w.cols();
        int gs = q.groupSize();
        int groups = n / gs;
        MemorySegment seg = w.data();
        long rb = q.rowBytes(n);
        long b0 = row * rb;
        long b1 = b0 + rb;
        long b2 = b1 + rb;
        long b3 = b2 + rb;
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        FloatVector c2 = FloatVector.zero(F);
        FloatVector c3 = FloatVector.zero(F);
        for (int g = 0; g < groups; g++) {
            FloatVector s0 = FloatVector.broadcast(F, q.scale(row, g, groups));
            FloatVector s1 = FloatVector.broadcast(F, q.scale(row + 1, g, groups));
            FloatVector s2 = FloatVector.broadcast(F, q.scale(row + 2, g, groups));
            FloatVector s3 = FloatVector.broadcast(F, q.scale(row + 3, g, groups));
            FloatVector z0 = FloatVector.broadcast(F, q.bias(row, g, groups));
            FloatVector z1 = FloatVector.broadcast(F, q.bias(row + 1, g, groups));
            FloatVector z2 = FloatVector.broadcast(F, q.bias(row + 2, g, groups));
            FloatVector z3 = FloatVector.broadcast(F, q.bias(row + 3, g, groups));
            int end = (g + 1) * gs;
            for (int k = g * gs; k < end; k += 2 * L) {
                FloatVector xl = FloatVector.fromArray(F, x, xOff + k);
                FloatVector xh = FloatVector.fromArray(F, x, xOff + k + L);
                long o = k / 2;
                IntVector v = (IntVector) ByteVector.fromMemorySegment(B, seg, b0 + o, LE).convertShape(VectorOperators.B2I, I, 0);
                c0 = ((FloatVector) v.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(s0, z0).fma(xl, c0);
                c0 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 4).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(s0, z0).fma(xh, c0);
                v = (IntVector) ByteVector.fromMemorySegment(B, seg, b1 + o, LE).convertShape(VectorOperators.B2I, I, 0);
                c1 = ((FloatVector) v.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(s1, z1).fma(xl, c1);
                c1 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 4).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(s1, z1).fma(xh, c1);
                v = (IntVector) ByteVector.fromMemorySegment(B, seg, b2 + o, LE).convertShape(VectorOperators.B2I, I, 0);
                c2 = ((FloatVector) v.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(s2, z2).fma(xl, c2);
                c2 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 4).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(s2, z2).fma(xh, c2);
                v = (IntVector) ByteVector.fromMemorySegment(B, seg, b3 + o, LE).convertShape(VectorOperators.B2I, I, 0);
                c3 = ((FloatVector) v.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(s3, z3).fma(xl, c3);
                c3 = ((FloatVector) v.lanewise(VectorOperators.LSHR, 4).lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).fma(s3, z3).fma(xh, c3);
            }
        }
        float[] lanes = LANES.get();
        c0.intoArray(lanes, 0);
        c1.intoArray(lanes, L);
        c2.intoArray(lanes, 2 * L);
        c3.intoArray(lanes, 3 * L);
        out[outOff] = sumLanes(lanes, 0); // fixed-order lane sums; no tail: the columns are whole blocks
        out[outOff + 1] = sumLanes(lanes, L);
        out[outOff + 2] = sumLanes(lanes, 2 * L);
        out[outOff + 3] = sumLanes(lanes, 3 * L);
    }

    /** Four 8-bit rows of w times x (column order). */
    static void matvec4Q8(Matrix w, int row, float[] x, int xOff, float[] out, int outOff) {
        GroupQuant q = w.quant();
        int n = w.cols();
        int gs = q.groupSize();
        int groups = n / gs;
        MemorySegment seg = w.data();
        long b0 = (long) row * n;
        long b1 = b0 + n;
        long b2 = b1 + n;
        long b3 = b2 + n;
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        FloatVector c2 = FloatVector.zero(F);
        FloatVector c3 = FloatVector.zero(F);
        for (int g = 0; g < groups; g++) {
            FloatVector s0 = FloatVector.broadcast(F, q.scale(row, g, groups));
            FloatVector s1 = FloatVector.broadcast(F, q.scale(row + 1, g, groups));
            FloatVector s2 = FloatVector.broadcast(F, q.scale(row + 2, g, groups));
            FloatVector s3 = FloatVector.broadcast(F, q.scale(row + 3, g, groups));
            FloatVector z0 = FloatVector.broadcast(F, q.bias(row, g, groups));
            FloatVector z1 = FloatVector.broadcast(F, q.bias(row + 1, g, groups));
            FloatVector z2 = FloatVector.broadcast(F, q.bias(row + 2, g, groups));
            FloatVector z3 = FloatVector.broadcast(F, q.bias(row + 3, g, groups));
            int end = (g + 1) * gs;
            for (int k = g * gs; k < end; k += L) {
                FloatVector xv = FloatVector.fromArray(F, x, xOff + k);
                c0 = ((FloatVector) ((IntVector) ByteVector.fromMemorySegment(B, seg, b0 + k, LE).convertShape(VectorOperators.B2I, I, 0)).lanewise(VectorOperators.AND, 0xFF).convert(VectorOperators.I2F, 0)).fma(s0, z0).fma(xv, c0);
                c1 = ((FloatVector) ((IntVector) ByteVector.fromMemorySegment(B, seg, b1 + k, LE).convertShape(VectorOperators.B2I, I, 0)).lanewise(VectorOperators.AND, 0xFF).convert(VectorOperators.I2F, 0)).fma(s1, z1).fma(xv, c1);
                c2 = ((FloatVector) ((IntVector) ByteVector.fromMemorySegment(B, seg, b2 + k, LE).convertShape(VectorOperators.B2I, I, 0)).lanewise(VectorOperators.AND, 0xFF).convert(VectorOperators.I2F, 0)).fma(s2, z2).fma(xv, c2);
                c3 = ((FloatVector) ((IntVector) ByteVector.fromMemorySegment(B, seg, b3 + k, LE).convertShape(VectorOperators.B2I, I, 0)).lanewise(VectorOperators.AND, 0xFF).convert(VectorOperators.I2F, 0)).fma(s3, z3).fma(xv, c3);
            }
        }
        float[] lanes = LANES.get();
        c0.intoArray(lanes, 0);
        c1.intoArray(lanes, L);
        c2.intoArray(lanes, 2 * L);
        c3.intoArray(lanes, 3 * L);
        out[outOff] = sumLanes(lanes, 0); // fixed-order lane sums; no tail: the columns are whole blocks
        out[outOff + 1] = sumLanes(lanes, L);
        out[outOff + 2] = sumLanes(lanes, 2 * L);
        out[outOff + 3] = sumLanes(lanes, 3 * L);
    }
}
