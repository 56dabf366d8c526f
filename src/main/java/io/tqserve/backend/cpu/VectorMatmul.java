package io.tqserve.backend.cpu;

import static io.tqserve.backend.cpu.VectorKernels.F;
import static io.tqserve.backend.cpu.VectorKernels.I;
import static io.tqserve.backend.cpu.VectorKernels.L;
import static io.tqserve.backend.cpu.VectorKernels.LANES;
import static io.tqserve.backend.cpu.VectorKernels.LE;
import static io.tqserve.backend.cpu.VectorKernels.S;
import static io.tqserve.backend.cpu.VectorKernels.sumLanes;

import io.tqserve.backend.Layouts;
import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;

/**
 * The Vector API kernels behind {@link VectorKernels#matvec} and {@link VectorKernels#tile}; their scalar twins are
 * {@link ScalarKernels#matvec} and {@link ScalarKernels#tile}. Written straight-line for the reason given in
 * {@link VectorKernels}: a helper that takes or returns a vector gets its vectors boxed.
 *
 * <p>Each output gets ONE accumulator vector over its row (steps of L lanes), then the fixed-order horizontal sum
 * ({@link VectorKernels#sumLanes}), then the scalar tail in order: the same arithmetic for an output whichever kernel
 * computes it. Register blocking comes from computing several outputs at once, never from splitting one output over
 * several accumulators (which would tie its bits to the blocking). On the development machine (AVX-512, one 512-bit
 * load per cycle) the loads bound these loops: a 4x4 tile issues 8 loads per 16 multiply-adds where four rows times
 * one x with four accumulators per row issued 20 per 16, and the single-x matvec shares each x load between four
 * weight rows.
 */
final class VectorMatmul {
    private VectorMatmul() {
    }

    /** Four bf16 rows of a matrix (at byte offset base, n columns) times x: the weight bytes widened in registers. */
    static void matvec4Bf16(MemorySegment seg, long base, int n, float[] x, int xOff, float[] out,
            int outOff) {
        float[] lanes = LANES.get();
        long b0 = base;
        long b1 = base + 2L * n;
        long b2 = base + 4L * n;
        long b3 = base + 6L * n;
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        FloatVector c2 = FloatVector.zero(F);
        FloatVector c3 = FloatVector.zero(F);
        int i = 0;
        for (int bound = n - L; i <= bound; i += L) {
            FloatVector xv = FloatVector.fromArray(F, x, xOff + i);
            c0 = ((IntVector) ShortVector.fromMemorySegment(S, seg, b0 + 2L * i, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xv, c0);
            c1 = ((IntVector) ShortVector.fromMemorySegment(S, seg, b1 + 2L * i, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xv, c1);
            c2 = ((IntVector) ShortVector.fromMemorySegment(S, seg, b2 + 2L * i, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xv, c2);
            c3 = ((IntVector) ShortVector.fromMemorySegment(S, seg, b3 + 2L * i, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xv, c3);
        }
        ((FloatVector) F.vectorType().cast(c0)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c1)).intoArray(lanes, L);
        ((FloatVector) F.vectorType().cast(c2)).intoArray(lanes, 2 * L);
        ((FloatVector) F.vectorType().cast(c3)).intoArray(lanes, 3 * L);
        float s0 = sumLanes(lanes, 0);
        float s1 = sumLanes(lanes, L);
        float s2 = sumLanes(lanes, 2 * L);
        float s3 = sumLanes(lanes, 3 * L);
        for (; i < n; i++) {
            float xi = x[xOff + i];
            s0 += Float.intBitsToFloat((seg.get(io.tqserve.backend.Layouts.SHORT_LE, b0 + 2L * i) & 0xFFFF) << 16) * xi;
            s1 += Float.intBitsToFloat((seg.get(io.tqserve.backend.Layouts.SHORT_LE, b1 + 2L * i) & 0xFFFF) << 16) * xi;
            s2 += Float.intBitsToFloat((seg.get(io.tqserve.backend.Layouts.SHORT_LE, b2 + 2L * i) & 0xFFFF) << 16) * xi;
            s3 += Float.intBitsToFloat((seg.get(io.tqserve.backend.Layouts.SHORT_LE, b3 + 2L * i) & 0xFFFF) << 16) * xi;
        }
        out[outOff] = s0;
        out[outOff + 1] = s1;
        out[outOff + 2] = s2;
        out[outOff + 3] = s3;
    }

    /**
     * {@link #matvec4Bf16} on four rows repacked by {@link #pack4}: the rows' 2L-column steps side by side, so the
     * kernel reads one contiguous stream (8·L bf16 per step) instead of four streams a row apart. Within a row's step
     * the pack pairs column {@code i+j} with column {@code i+L+j} in one 32-bit word (low and high half), so one
     * full-width integer load gives both halves' floats with one shift (low half) and one mask (high half), where the
     * mapped layout needs a widening conversion plus a shift per L values: a third fewer instructions per weight,
     * which matters because the loop overlaps arithmetic with memory streaming only as far as its arithmetic leaves
     * room. The lane j accumulator still adds column {@code i+j}, then {@code i+L+j}, then the next step's: the same
     * operations in the same order per row as {@link #matvec4Bf16}, so the same bits. Needs n % L == 0; an odd last
     * L-column step is stored and read as in the mapped layout.
     */
    static void matvec4Packed(MemorySegment seg, long base, int n, float[] x, int xOff, float[] out, int outOff) {
        float[] lanes = LANES.get();
        long step = 4L * L;
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        FloatVector c2 = FloatVector.zero(F);
        FloatVector c3 = FloatVector.zero(F);
        int pairs = n / (2 * L);
        for (int p = 0; p < pairs; p++) {
            int i = 2 * L * p;
            long b = base + 8L * i;
            FloatVector xl = FloatVector.fromArray(F, x, xOff + i);
            FloatVector xh = FloatVector.fromArray(F, x, xOff + i + L);
            IntVector w0 = IntVector.fromMemorySegment(I, seg, b, LE);
            IntVector w1 = IntVector.fromMemorySegment(I, seg, b + step, LE);
            IntVector w2 = IntVector.fromMemorySegment(I, seg, b + 2 * step, LE);
            IntVector w3 = IntVector.fromMemorySegment(I, seg, b + 3 * step, LE);
            c0 = w0.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xl, c0);
            c1 = w1.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xl, c1);
            c2 = w2.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xl, c2);
            c3 = w3.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xl, c3);
            c0 = w0.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats().fma(xh, c0);
            c1 = w1.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats().fma(xh, c1);
            c2 = w2.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats().fma(xh, c2);
            c3 = w3.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats().fma(xh, c3);
        }
        if (n % (2 * L) != 0) { // one last L-column step, stored as in pack4's mapped-order tail
            int i = n - L;
            long b = base + 8L * i;
            long half = 2L * L;
            FloatVector xv = FloatVector.fromArray(F, x, xOff + i);
            c0 = ((IntVector) ShortVector.fromMemorySegment(S, seg, b, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xv, c0);
            c1 = ((IntVector) ShortVector.fromMemorySegment(S, seg, b + half, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xv, c1);
            c2 = ((IntVector) ShortVector.fromMemorySegment(S, seg, b + 2 * half, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xv, c2);
            c3 = ((IntVector) ShortVector.fromMemorySegment(S, seg, b + 3 * half, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xv, c3);
        }
        ((FloatVector) F.vectorType().cast(c0)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c1)).intoArray(lanes, L);
        ((FloatVector) F.vectorType().cast(c2)).intoArray(lanes, 2 * L);
        ((FloatVector) F.vectorType().cast(c3)).intoArray(lanes, 3 * L);
        out[outOff] = sumLanes(lanes, 0);
        out[outOff + 1] = sumLanes(lanes, L);
        out[outOff + 2] = sumLanes(lanes, 2 * L);
        out[outOff + 3] = sumLanes(lanes, 3 * L);
    }

    /**
     * Copies four bf16 rows (n columns, row-major at src byte offset srcBase) into the layout {@link #matvec4Packed}
     * reads: for each step of 2L columns, row 0's 2L values, then rows 1, 2 and 3's (16·L bytes per step), each
     * row's values as L 32-bit words whose word j holds column {@code i+j} in its low half and {@code i+L+j} in its
     * high half. When n is an odd number of L-column steps, the last step holds each row's L values in column order.
     */
    static void pack4(MemorySegment src, long srcBase, MemorySegment dst, long dstBase, int n) {
        int pairs = n / (2 * L);
        for (int p = 0; p < pairs; p++) {
            int i = 2 * L * p;
            for (int q = 0; q < 4; q++) {
                long from = srcBase + 2L * ((long) q * n + i);
                long to = dstBase + 8L * i + q * 4L * L;
                IntVector lo = ((IntVector) ShortVector.fromMemorySegment(S, src, from, LE)
                        .convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.AND, 0xFFFF);
                IntVector hi = ((IntVector) ShortVector.fromMemorySegment(S, src, from + 2L * L, LE)
                        .convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16);
                lo.or(hi).intoMemorySegment(dst, to, LE);
            }
        }
        if (n % (2 * L) != 0) {
            int i = n - L;
            for (int q = 0; q < 4; q++) {
                MemorySegment.copy(src, srcBase + 2L * ((long) q * n + i), dst, dstBase + 8L * i + q * 2L * L, 2L * L);
            }
        }
    }

    /**
     * Four float rows of w (stride n) times two rows of x: 8 accumulators, for machines with 16 vector registers
     * (AVX2), where the 16 accumulators of {@link #tile4x4} plus its operands do not fit and spill every step.
     */
    static void tile4x2(float[] w, int wOff, float[] x, int xOff, int n, float[] out, int outOff, int outStride) {
        float[] lanes = LANES.get();
        int w0 = wOff;
        int w1 = wOff + n;
        int w2 = wOff + 2 * n;
        int w3 = wOff + 3 * n;
        int x0 = xOff;
        int x1 = xOff + n;
        FloatVector c00 = FloatVector.zero(F), c01 = FloatVector.zero(F), c02 = FloatVector.zero(F), c03 = FloatVector.zero(F);
        FloatVector c10 = FloatVector.zero(F), c11 = FloatVector.zero(F), c12 = FloatVector.zero(F), c13 = FloatVector.zero(F);
        int i = 0;
        for (int bound = n - L; i <= bound; i += L) {
            // cRQ: x row R, w row Q
            FloatVector v0 = FloatVector.fromArray(F, x, x0 + i);
            FloatVector v1 = FloatVector.fromArray(F, x, x1 + i);
            FloatVector u = FloatVector.fromArray(F, w, w0 + i);
            c00 = u.fma(v0, c00);
            c10 = u.fma(v1, c10);
            u = FloatVector.fromArray(F, w, w1 + i);
            c01 = u.fma(v0, c01);
            c11 = u.fma(v1, c11);
            u = FloatVector.fromArray(F, w, w2 + i);
            c02 = u.fma(v0, c02);
            c12 = u.fma(v1, c12);
            u = FloatVector.fromArray(F, w, w3 + i);
            c03 = u.fma(v0, c03);
            c13 = u.fma(v1, c13);
        }
        ((FloatVector) F.vectorType().cast(c00)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c01)).intoArray(lanes, L);
        ((FloatVector) F.vectorType().cast(c02)).intoArray(lanes, 2 * L);
        ((FloatVector) F.vectorType().cast(c03)).intoArray(lanes, 3 * L);
        ((FloatVector) F.vectorType().cast(c10)).intoArray(lanes, 4 * L);
        ((FloatVector) F.vectorType().cast(c11)).intoArray(lanes, 5 * L);
        ((FloatVector) F.vectorType().cast(c12)).intoArray(lanes, 6 * L);
        ((FloatVector) F.vectorType().cast(c13)).intoArray(lanes, 7 * L);
        for (int r = 0; r < 2; r++) {
            int xr = xOff + r * n;
            for (int q = 0; q < 4; q++) {
                int wq = wOff + q * n;
                float s = sumLanes(lanes, (4 * r + q) * L);
                for (int k = i; k < n; k++) {
                    s += w[wq + k] * x[xr + k];
                }
                out[outOff + r * outStride + q] = s;
            }
        }
    }

    /** Four float rows of w (stride n) times one row of x. */
    static void tile4x1(float[] w, int wOff, float[] x, int xOff, int n, float[] out, int outOff) {
        float[] lanes = LANES.get();
        int o0 = wOff;
        int o1 = wOff + n;
        int o2 = wOff + 2 * n;
        int o3 = wOff + 3 * n;
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        FloatVector c2 = FloatVector.zero(F);
        FloatVector c3 = FloatVector.zero(F);
        int i = 0;
        for (int bound = n - L; i <= bound; i += L) {
            FloatVector xv = FloatVector.fromArray(F, x, xOff + i);
            c0 = FloatVector.fromArray(F, w, o0 + i).fma(xv, c0);
            c1 = FloatVector.fromArray(F, w, o1 + i).fma(xv, c1);
            c2 = FloatVector.fromArray(F, w, o2 + i).fma(xv, c2);
            c3 = FloatVector.fromArray(F, w, o3 + i).fma(xv, c3);
        }
        ((FloatVector) F.vectorType().cast(c0)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c1)).intoArray(lanes, L);
        ((FloatVector) F.vectorType().cast(c2)).intoArray(lanes, 2 * L);
        ((FloatVector) F.vectorType().cast(c3)).intoArray(lanes, 3 * L);
        float s0 = sumLanes(lanes, 0);
        float s1 = sumLanes(lanes, L);
        float s2 = sumLanes(lanes, 2 * L);
        float s3 = sumLanes(lanes, 3 * L);
        for (; i < n; i++) {
            float xi = x[xOff + i];
            s0 += w[o0 + i] * xi;
            s1 += w[o1 + i] * xi;
            s2 += w[o2 + i] * xi;
            s3 += w[o3 + i] * xi;
        }
        out[outOff] = s0;
        out[outOff + 1] = s1;
        out[outOff + 2] = s2;
        out[outOff + 3] = s3;
    }

    /** One float row of w times one row of x. */
    static float tile1x1(float[] w, int wOff, float[] x, int xOff, int n) {
        float[] lanes = LANES.get();
        FloatVector c = FloatVector.zero(F);
        int i = 0;
        for (int bound = n - L; i <= bound; i += L) {
            c = FloatVector.fromArray(F, w, wOff + i).fma(FloatVector.fromArray(F, x, xOff + i), c);
        }
        ((FloatVector) F.vectorType().cast(c)).intoArray(lanes, 0);
        float s = sumLanes(lanes, 0);
        for (; i < n; i++) {
            s += w[wOff + i] * x[xOff + i];
        }
        return s;
    }

    /** Four float rows of w (stride n) times four rows of x (stride n): 16 outputs, 8 loads per 16 multiply-adds. */
    static void tile4x4(float[] w, int wOff, float[] x, int xOff, int n, float[] out, int outOff,
            int outStride) {
        float[] lanes = LANES.get();
        int w0 = wOff;
        int w1 = wOff + n;
        int w2 = wOff + 2 * n;
        int w3 = wOff + 3 * n;
        int x0 = xOff;
        int x1 = xOff + n;
        int x2 = xOff + 2 * n;
        int x3 = xOff + 3 * n;
        FloatVector c00 = FloatVector.zero(F), c01 = FloatVector.zero(F), c02 = FloatVector.zero(F), c03 = FloatVector.zero(F);
        FloatVector c10 = FloatVector.zero(F), c11 = FloatVector.zero(F), c12 = FloatVector.zero(F), c13 = FloatVector.zero(F);
        FloatVector c20 = FloatVector.zero(F), c21 = FloatVector.zero(F), c22 = FloatVector.zero(F), c23 = FloatVector.zero(F);
        FloatVector c30 = FloatVector.zero(F), c31 = FloatVector.zero(F), c32 = FloatVector.zero(F), c33 = FloatVector.zero(F);
        int i = 0;
        for (int bound = n - L; i <= bound; i += L) {
            // cRQ: x row R, w row Q
            FloatVector v0 = FloatVector.fromArray(F, x, x0 + i);
            FloatVector v1 = FloatVector.fromArray(F, x, x1 + i);
            FloatVector v2 = FloatVector.fromArray(F, x, x2 + i);
            FloatVector v3 = FloatVector.fromArray(F, x, x3 + i);
            FloatVector u = FloatVector.fromArray(F, w, w0 + i);
            c00 = u.fma(v0, c00);
            c10 = u.fma(v1, c10);
            c20 = u.fma(v2, c20);
            c30 = u.fma(v3, c30);
            u = FloatVector.fromArray(F, w, w1 + i);
            c01 = u.fma(v0, c01);
            c11 = u.fma(v1, c11);
            c21 = u.fma(v2, c21);
            c31 = u.fma(v3, c31);
            u = FloatVector.fromArray(F, w, w2 + i);
            c02 = u.fma(v0, c02);
            c12 = u.fma(v1, c12);
            c22 = u.fma(v2, c22);
            c32 = u.fma(v3, c32);
            u = FloatVector.fromArray(F, w, w3 + i);
            c03 = u.fma(v0, c03);
            c13 = u.fma(v1, c13);
            c23 = u.fma(v2, c23);
            c33 = u.fma(v3, c33);
        }
        ((FloatVector) F.vectorType().cast(c00)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c01)).intoArray(lanes, L);
        ((FloatVector) F.vectorType().cast(c02)).intoArray(lanes, 2 * L);
        ((FloatVector) F.vectorType().cast(c03)).intoArray(lanes, 3 * L);
        ((FloatVector) F.vectorType().cast(c10)).intoArray(lanes, 4 * L);
        ((FloatVector) F.vectorType().cast(c11)).intoArray(lanes, 5 * L);
        ((FloatVector) F.vectorType().cast(c12)).intoArray(lanes, 6 * L);
        ((FloatVector) F.vectorType().cast(c13)).intoArray(lanes, 7 * L);
        ((FloatVector) F.vectorType().cast(c20)).intoArray(lanes, 8 * L);
        ((FloatVector) F.vectorType().cast(c21)).intoArray(lanes, 9 * L);
        ((FloatVector) F.vectorType().cast(c22)).intoArray(lanes, 10 * L);
        ((FloatVector) F.vectorType().cast(c23)).intoArray(lanes, 11 * L);
        ((FloatVector) F.vectorType().cast(c30)).intoArray(lanes, 12 * L);
        ((FloatVector) F.vectorType().cast(c31)).intoArray(lanes, 13 * L);
        ((FloatVector) F.vectorType().cast(c32)).intoArray(lanes, 14 * L);
        ((FloatVector) F.vectorType().cast(c33)).intoArray(lanes, 15 * L);
        for (int r = 0; r < 4; r++) {
            int xr = xOff + r * n;
            for (int q = 0; q < 4; q++) {
                int wq = wOff + q * n;
                float s = sumLanes(lanes, (4 * r + q) * L);
                for (int k = i; k < n; k++) {
                    s += w[wq + k] * x[xr + k];
                }
                out[outOff + r * outStride + q] = s;
            }
        }
    }
}
