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
 * multiply-add per weight on the integer codes, the scale is applied once per group (a vector multiply-add into the
 * row's accumulator) and the bias once per row against the groups' sums of x, computed once per activation row
 * ({@link #groupSums}).
 *
 * <p>A load takes L little-endian ints, each holding P = 32/bits codes (code k of int j is column j·P + k of the
 * block); rather than interleave the codes again, the kernels work in their load order: within each block of P·L
 * columns, column j·P + k sits at position k·L + j. Code k is not shifted down to bit 0 but masked in place (one
 * AND), so its int is q·2^(k·bits), which converts to float exactly; the activations, permuted into the kernels'
 * order once per matmul ({@link #permute}), are scaled by 2^-(k·bits) to match, which is exact too (a power of two),
 * so the product, and every rounding after it, is the same as for q·x. Only the last code, which holds the int's
 * sign bit, is shifted down. Per weight that is an AND, a conversion and a multiply-add, against the bf16 kernel's
 * widening load, shift and multiply-add.
 *
 * <p>The scales of the four rows are read once per call into a float scratch and the bias terms computed before the
 * loop: a call per group in the loop (to read a bf16 scale) made C2 spill every vector register around it and cost
 * more than the multiply-adds. A batch of activation rows runs the same kernel per row against each block of four
 * weight rows (which then stays in the L1 cache), so every output has the same arithmetic whatever the batch and
 * batching never changes a result (as with the bf16 kernels). Straight-line code for the reason given in
 * {@link VectorKernels}.
 */
final class QuantizedVector {
    /** The kernels need 256-bit or wider vectors (their blocks of P·L columns fit the group sizes then). */
    static final boolean WIDE = F.vectorBitSize() >= 256;

    private QuantizedVector() {
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
     * {@code j·P + k} (code k of int j, P = 32/bits codes per int) moves to {@code k·L + j}, scaled by
     * {@code 2^-(k·bits)} for every k but the last (the codes the kernels mask in place).
     */
    static void permute(int bits, float[] x, int xOff, int n, float[] dst, int dOff) {
        int per = 32 / bits;
        int blk = block(bits);
        for (int b = 0; b < n; b += blk) {
            for (int k = 0; k < per; k++) {
                float unit = k == per - 1 ? 1f : Math.scalb(1f, -k * bits);
                for (int j = 0; j < L; j++) {
                    dst[dOff + b + k * L + j] = x[xOff + b + j * per + k] * unit;
                }
            }
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

    /**
     * The prologue of a call on rows row..row+3 (beyond count: the last row's again): their scales to
     * {@code sb[q·groups + g]} and their bias terms {@code Σ_g bias(r, g) · xsum[g]} (multiply-adds in group order) to
     * {@code sb[4·groups + q]}. The four rows run interleaved (four independent chains), bf16 read inline.
     */
    static void prologue(Matrix w, int row, int count, float[] xsum, int xsOff, float[] sb) {
        GroupQuant q = w.quant();
        int groups = w.cols() / q.groupSize();
        MemorySegment ss = q.scales();
        MemorySegment bs = q.biases();
        DType t = q.scaleType();
        long i0 = (long) row * groups;
        long i1 = (long) (row + Math.min(1, count - 1)) * groups;
        long i2 = (long) (row + Math.min(2, count - 1)) * groups;
        long i3 = (long) (row + Math.min(3, count - 1)) * groups;
        float z0 = 0;
        float z1 = 0;
        float z2 = 0;
        float z3 = 0;
        if (t == DType.BF16) {
            for (int g = 0; g < groups; g++) {
                float xs = xsum[xsOff + g];
                sb[g] = bf16(ss, i0 + g);
                sb[groups + g] = bf16(ss, i1 + g);
                sb[2 * groups + g] = bf16(ss, i2 + g);
                sb[3 * groups + g] = bf16(ss, i3 + g);
                z0 = Math.fma(bf16(bs, i0 + g), xs, z0);
                z1 = Math.fma(bf16(bs, i1 + g), xs, z1);
                z2 = Math.fma(bf16(bs, i2 + g), xs, z2);
                z3 = Math.fma(bf16(bs, i3 + g), xs, z3);
            }
        } else {
            for (int g = 0; g < groups; g++) {
                float xs = xsum[xsOff + g];
                sb[g] = t.read(ss, i0 + g);
                sb[groups + g] = t.read(ss, i1 + g);
                sb[2 * groups + g] = t.read(ss, i2 + g);
                sb[3 * groups + g] = t.read(ss, i3 + g);
                z0 = Math.fma(t.read(bs, i0 + g), xs, z0);
                z1 = Math.fma(t.read(bs, i1 + g), xs, z1);
                z2 = Math.fma(t.read(bs, i2 + g), xs, z2);
                z3 = Math.fma(t.read(bs, i3 + g), xs, z3);
            }
        }
        sb[4 * groups] = z0;
        sb[4 * groups + 1] = z1;
        sb[4 * groups + 2] = z2;
        sb[4 * groups + 3] = z3;
    }

    private static float bf16(MemorySegment m, long i) {
        return Float.intBitsToFloat((m.getAtIndex(Layouts.SHORT_LE, i) & 0xFFFF) << 16);
    }

    /** out[outOff+q] = the fixed-order lane sum of accumulator q (lanes[q·L..]) + its bias term, for q < count. */
    static void finish(float[] lanes, float[] sb, int groups, int count, float[] out, int outOff) {
        out[outOff] = sumLanes(lanes, 0) + sb[4 * groups];
        if (count > 1) {
            out[outOff + 1] = sumLanes(lanes, L) + sb[4 * groups + 1];
        }
        if (count > 2) {
            out[outOff + 2] = sumLanes(lanes, 2 * L) + sb[4 * groups + 2];
        }
        if (count > 3) {
            out[outOff + 3] = sumLanes(lanes, 3 * L) + sb[4 * groups + 3];
        }
    }

    /**
     * Up to four 4-bit rows of w (row .. row+count-1) times x (in the kernels' order: {@link #permute}):
     * out[outOff+q] = row (row+q) · x, with {@code xsum[xsOff + g]} the sum of x over group g and {@code sb} room
     * for 4 · groups + 4 floats (the rows' scales and bias terms: {@link #prologue}). See the class comment for the arithmetic. Rows
     * beyond count are computed on a copy of the last one and not written.
     */
    static void matvecQ4(Matrix w, int row, int count, float[] x, int xOff, float[] xsum, int xsOff, float[] sb,
            float[] out, int outOff) {
        int n = w.cols();
        int shift = Integer.numberOfTrailingZeros(w.quant().groupSize());
        int groups = n >> shift;
        MemorySegment seg = w.data();
        long rb = w.quant().rowBytes(n);
        int r1 = row + Math.min(1, count - 1);
        int r2 = row + Math.min(2, count - 1);
        int r3 = row + Math.min(3, count - 1);
        long b0 = rb * row;
        long b1 = rb * r1;
        long b2 = rb * r2;
        long b3 = rb * r3;
        prologue(w, row, count, xsum, xsOff, sb);
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        FloatVector c2 = FloatVector.zero(F);
        FloatVector c3 = FloatVector.zero(F);
        FloatVector xv;
        for (int k = 0; k < n; k += 8 * L) {
            IntVector v0 = IntVector.fromMemorySegment(I, seg, b0 + k / 2, LE);
            IntVector v1 = IntVector.fromMemorySegment(I, seg, b1 + k / 2, LE);
            IntVector v2 = IntVector.fromMemorySegment(I, seg, b2 + k / 2, LE);
            IntVector v3 = IntVector.fromMemorySegment(I, seg, b3 + k / 2, LE);
            xv = FloatVector.fromArray(F, x, xOff + k);
            FloatVector e0 = ((FloatVector) v0.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).mul(xv);
            FloatVector e1 = ((FloatVector) v1.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).mul(xv);
            FloatVector e2 = ((FloatVector) v2.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).mul(xv);
            FloatVector e3 = ((FloatVector) v3.lanewise(VectorOperators.AND, 0xF).convert(VectorOperators.I2F, 0)).mul(xv);
            xv = FloatVector.fromArray(F, x, xOff + k + 1 * L);
            FloatVector o0 = ((FloatVector) v0.lanewise(VectorOperators.AND, 0xF0).convert(VectorOperators.I2F, 0)).mul(xv);
            FloatVector o1 = ((FloatVector) v1.lanewise(VectorOperators.AND, 0xF0).convert(VectorOperators.I2F, 0)).mul(xv);
            FloatVector o2 = ((FloatVector) v2.lanewise(VectorOperators.AND, 0xF0).convert(VectorOperators.I2F, 0)).mul(xv);
            FloatVector o3 = ((FloatVector) v3.lanewise(VectorOperators.AND, 0xF0).convert(VectorOperators.I2F, 0)).mul(xv);
            xv = FloatVector.fromArray(F, x, xOff + k + 2 * L);
            e0 = ((FloatVector) v0.lanewise(VectorOperators.AND, 0xF00).convert(VectorOperators.I2F, 0)).fma(xv, e0);
            e1 = ((FloatVector) v1.lanewise(VectorOperators.AND, 0xF00).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            e2 = ((FloatVector) v2.lanewise(VectorOperators.AND, 0xF00).convert(VectorOperators.I2F, 0)).fma(xv, e2);
            e3 = ((FloatVector) v3.lanewise(VectorOperators.AND, 0xF00).convert(VectorOperators.I2F, 0)).fma(xv, e3);
            xv = FloatVector.fromArray(F, x, xOff + k + 3 * L);
            o0 = ((FloatVector) v0.lanewise(VectorOperators.AND, 0xF000).convert(VectorOperators.I2F, 0)).fma(xv, o0);
            o1 = ((FloatVector) v1.lanewise(VectorOperators.AND, 0xF000).convert(VectorOperators.I2F, 0)).fma(xv, o1);
            o2 = ((FloatVector) v2.lanewise(VectorOperators.AND, 0xF000).convert(VectorOperators.I2F, 0)).fma(xv, o2);
            o3 = ((FloatVector) v3.lanewise(VectorOperators.AND, 0xF000).convert(VectorOperators.I2F, 0)).fma(xv, o3);
            xv = FloatVector.fromArray(F, x, xOff + k + 4 * L);
            e0 = ((FloatVector) v0.lanewise(VectorOperators.AND, 0xF0000).convert(VectorOperators.I2F, 0)).fma(xv, e0);
            e1 = ((FloatVector) v1.lanewise(VectorOperators.AND, 0xF0000).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            e2 = ((FloatVector) v2.lanewise(VectorOperators.AND, 0xF0000).convert(VectorOperators.I2F, 0)).fma(xv, e2);
            e3 = ((FloatVector) v3.lanewise(VectorOperators.AND, 0xF0000).convert(VectorOperators.I2F, 0)).fma(xv, e3);
            xv = FloatVector.fromArray(F, x, xOff + k + 5 * L);
            o0 = ((FloatVector) v0.lanewise(VectorOperators.AND, 0xF00000).convert(VectorOperators.I2F, 0)).fma(xv, o0);
            o1 = ((FloatVector) v1.lanewise(VectorOperators.AND, 0xF00000).convert(VectorOperators.I2F, 0)).fma(xv, o1);
            o2 = ((FloatVector) v2.lanewise(VectorOperators.AND, 0xF00000).convert(VectorOperators.I2F, 0)).fma(xv, o2);
            o3 = ((FloatVector) v3.lanewise(VectorOperators.AND, 0xF00000).convert(VectorOperators.I2F, 0)).fma(xv, o3);
            xv = FloatVector.fromArray(F, x, xOff + k + 6 * L);
            e0 = ((FloatVector) v0.lanewise(VectorOperators.AND, 0xF000000).convert(VectorOperators.I2F, 0)).fma(xv, e0);
            e1 = ((FloatVector) v1.lanewise(VectorOperators.AND, 0xF000000).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            e2 = ((FloatVector) v2.lanewise(VectorOperators.AND, 0xF000000).convert(VectorOperators.I2F, 0)).fma(xv, e2);
            e3 = ((FloatVector) v3.lanewise(VectorOperators.AND, 0xF000000).convert(VectorOperators.I2F, 0)).fma(xv, e3);
            xv = FloatVector.fromArray(F, x, xOff + k + 7 * L);
            o0 = ((FloatVector) v0.lanewise(VectorOperators.LSHR, 28).convert(VectorOperators.I2F, 0)).fma(xv, o0);
            o1 = ((FloatVector) v1.lanewise(VectorOperators.LSHR, 28).convert(VectorOperators.I2F, 0)).fma(xv, o1);
            o2 = ((FloatVector) v2.lanewise(VectorOperators.LSHR, 28).convert(VectorOperators.I2F, 0)).fma(xv, o2);
            o3 = ((FloatVector) v3.lanewise(VectorOperators.LSHR, 28).convert(VectorOperators.I2F, 0)).fma(xv, o3);
            int g = k >> shift;
            c0 = e0.add(o0).fma(FloatVector.broadcast(F, sb[g]), c0);
            c1 = e1.add(o1).fma(FloatVector.broadcast(F, sb[groups + g]), c1);
            c2 = e2.add(o2).fma(FloatVector.broadcast(F, sb[2 * groups + g]), c2);
            c3 = e3.add(o3).fma(FloatVector.broadcast(F, sb[3 * groups + g]), c3);
        }
        float[] lanes = LANES.get();
        c0.intoArray(lanes, 0);
        c1.intoArray(lanes, L);
        c2.intoArray(lanes, 2 * L);
        c3.intoArray(lanes, 3 * L);
        finish(lanes, sb, groups, count, out, outOff);
    }


    /** As {@link #matvecQ4}, for 8-bit rows. */
    static void matvecQ8(Matrix w, int row, int count, float[] x, int xOff, float[] xsum, int xsOff, float[] sb,
            float[] out, int outOff) {
        int n = w.cols();
        int shift = Integer.numberOfTrailingZeros(w.quant().groupSize());
        int groups = n >> shift;
        MemorySegment seg = w.data();
        long rb = w.quant().rowBytes(n);
        int r1 = row + Math.min(1, count - 1);
        int r2 = row + Math.min(2, count - 1);
        int r3 = row + Math.min(3, count - 1);
        long b0 = rb * row;
        long b1 = rb * r1;
        long b2 = rb * r2;
        long b3 = rb * r3;
        prologue(w, row, count, xsum, xsOff, sb);
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        FloatVector c2 = FloatVector.zero(F);
        FloatVector c3 = FloatVector.zero(F);
        FloatVector xv;
        for (int k = 0; k < n; k += 4 * L) {
            IntVector v0 = IntVector.fromMemorySegment(I, seg, b0 + k, LE);
            IntVector v1 = IntVector.fromMemorySegment(I, seg, b1 + k, LE);
            IntVector v2 = IntVector.fromMemorySegment(I, seg, b2 + k, LE);
            IntVector v3 = IntVector.fromMemorySegment(I, seg, b3 + k, LE);
            xv = FloatVector.fromArray(F, x, xOff + k);
            FloatVector e0 = ((FloatVector) v0.lanewise(VectorOperators.AND, 0xFF).convert(VectorOperators.I2F, 0)).mul(xv);
            FloatVector e1 = ((FloatVector) v1.lanewise(VectorOperators.AND, 0xFF).convert(VectorOperators.I2F, 0)).mul(xv);
            FloatVector e2 = ((FloatVector) v2.lanewise(VectorOperators.AND, 0xFF).convert(VectorOperators.I2F, 0)).mul(xv);
            FloatVector e3 = ((FloatVector) v3.lanewise(VectorOperators.AND, 0xFF).convert(VectorOperators.I2F, 0)).mul(xv);
            xv = FloatVector.fromArray(F, x, xOff + k + 1 * L);
            FloatVector o0 = ((FloatVector) v0.lanewise(VectorOperators.AND, 0xFF00).convert(VectorOperators.I2F, 0)).mul(xv);
            FloatVector o1 = ((FloatVector) v1.lanewise(VectorOperators.AND, 0xFF00).convert(VectorOperators.I2F, 0)).mul(xv);
            FloatVector o2 = ((FloatVector) v2.lanewise(VectorOperators.AND, 0xFF00).convert(VectorOperators.I2F, 0)).mul(xv);
            FloatVector o3 = ((FloatVector) v3.lanewise(VectorOperators.AND, 0xFF00).convert(VectorOperators.I2F, 0)).mul(xv);
            xv = FloatVector.fromArray(F, x, xOff + k + 2 * L);
            e0 = ((FloatVector) v0.lanewise(VectorOperators.AND, 0xFF0000).convert(VectorOperators.I2F, 0)).fma(xv, e0);
            e1 = ((FloatVector) v1.lanewise(VectorOperators.AND, 0xFF0000).convert(VectorOperators.I2F, 0)).fma(xv, e1);
            e2 = ((FloatVector) v2.lanewise(VectorOperators.AND, 0xFF0000).convert(VectorOperators.I2F, 0)).fma(xv, e2);
            e3 = ((FloatVector) v3.lanewise(VectorOperators.AND, 0xFF0000).convert(VectorOperators.I2F, 0)).fma(xv, e3);
            xv = FloatVector.fromArray(F, x, xOff + k + 3 * L);
            o0 = ((FloatVector) v0.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0)).fma(xv, o0);
            o1 = ((FloatVector) v1.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0)).fma(xv, o1);
            o2 = ((FloatVector) v2.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0)).fma(xv, o2);
            o3 = ((FloatVector) v3.lanewise(VectorOperators.LSHR, 24).convert(VectorOperators.I2F, 0)).fma(xv, o3);
            int g = k >> shift;
            c0 = e0.add(o0).fma(FloatVector.broadcast(F, sb[g]), c0);
            c1 = e1.add(o1).fma(FloatVector.broadcast(F, sb[groups + g]), c1);
            c2 = e2.add(o2).fma(FloatVector.broadcast(F, sb[2 * groups + g]), c2);
            c3 = e3.add(o3).fma(FloatVector.broadcast(F, sb[3 * groups + g]), c3);
        }
        float[] lanes = LANES.get();
        c0.intoArray(lanes, 0);
        c1.intoArray(lanes, L);
        c2.intoArray(lanes, 2 * L);
        c3.intoArray(lanes, 3 * L);
        finish(lanes, sb, groups, count, out, outOff);
    }

}
