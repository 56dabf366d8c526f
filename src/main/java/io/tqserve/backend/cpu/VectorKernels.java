package io.tqserve.backend.cpu;

import io.tqserve.backend.DType;
import io.tqserve.backend.Kernels;
import io.tqserve.backend.Matrix;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * Vector API kernels (preferred species of the machine) with scalar tails. {@link ScalarKernels} is the twin
 * the parity tests compare against. bf16 rows are widened in registers (shift left by 16) straight from the
 * memory-mapped weights, so a decode step streams each weight byte once.
 */
public final class VectorKernels implements Kernels {
    // The vector expressions are written out in every loop on purpose: a small helper method returning a vector
    // is compiled on its own once hot, is then too big for C2 to inline (InlineSmallCode), and its result gets
    // boxed on every call, which cuts the bandwidth of decode by up to 10x depending on compilation order.
    static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
    /** Shorts with as many lanes as F: half the bit size. */
    static final VectorSpecies<Short> S =
            VectorSpecies.of(short.class, VectorShape.forBitSize(F.vectorBitSize() / 2));
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final int L = F.length();

    private final ScalarKernels tail = new ScalarKernels();
    /** Per-thread lane buffer for the horizontal sums (room for the 16 outputs of a 4x4 tile). */
    private static final ThreadLocal<float[]> LANES = ThreadLocal.withInitial(() -> new float[16 * L]);

    /**
     * The horizontal sum of the L lanes at {@code lanes[off..off+L)}, in one fixed order: halves folded onto each
     * other (lane k + w added to lane k for w = L/2, L/4, ..., 1). {@code reduceLanes(ADD)} may sum in any order and
     * does so differently when interpreted than when compiled, which made the same input give different bits before
     * and after JIT warm-up; a fixed order keeps every result reproducible, and every dot kernel here uses this one,
     * so a row's result does not depend on the kernel (single, four-row, direct bf16) that computed it. The fold has
     * L/2 independent adds per level (depth log2 L) where a lane-by-lane sum is a chain of L dependent adds: on rows
     * of 512 that chain took about as long as the multiply-adds. Scalar in and out, so this helper is inlined and
     * boxes nothing.
     */
    static float sumLanes(float[] lanes, int off) {
        // The common widths written out (L is a constant, so C2 keeps one branch): values in registers, no stores.
        if (L == 16) {
            float a0 = lanes[off] + lanes[off + 8];
            float a1 = lanes[off + 1] + lanes[off + 9];
            float a2 = lanes[off + 2] + lanes[off + 10];
            float a3 = lanes[off + 3] + lanes[off + 11];
            float a4 = lanes[off + 4] + lanes[off + 12];
            float a5 = lanes[off + 5] + lanes[off + 13];
            float a6 = lanes[off + 6] + lanes[off + 14];
            float a7 = lanes[off + 7] + lanes[off + 15];
            float b0 = a0 + a4;
            float b1 = a1 + a5;
            float b2 = a2 + a6;
            float b3 = a3 + a7;
            return (b0 + b2) + (b1 + b3);
        }
        if (L == 8) {
            float b0 = lanes[off] + lanes[off + 4];
            float b1 = lanes[off + 1] + lanes[off + 5];
            float b2 = lanes[off + 2] + lanes[off + 6];
            float b3 = lanes[off + 3] + lanes[off + 7];
            return (b0 + b2) + (b1 + b3);
        }
        if (L == 4) {
            return (lanes[off] + lanes[off + 2]) + (lanes[off + 1] + lanes[off + 3]);
        }
        for (int w = L >> 1; w > 0; w >>= 1) {
            for (int k = 0; k < w; k++) {
                lanes[off + k] += lanes[off + k + w];
            }
        }
        return lanes[off];
    }
    private final ThreadLocal<float[]> scratchRows = new ThreadLocal<>();

    private float[] rowScratch(int n) {
        float[] s = scratchRows.get();
        if (s == null || s.length < n) {
            s = new float[n];
            scratchRows.set(s);
        }
        return s;
    }

    /** Lanes of the float species, e.g. 8 for 256-bit vectors. */
    public static int lanes() {
        return L;
    }

    @Override
    public String name() {
        return "vector";
    }

    /**
     * Same loop structure (4 accumulators, then single vectors, then a scalar tail) as {@link #dotBf16} and
     * {@link #dotF32}, so a row decoded to floats and dotted here gives bit-identical results to the direct
     * kernels: batching rows never changes a sequence's numbers.
     */
    @Override
    public float dot(float[] a, int aOff, float[] b, int bOff, int n) {
        float[] lanes = LANES.get();
        int i = 0;
        FloatVector acc0 = FloatVector.zero(F);
        FloatVector acc1 = FloatVector.zero(F);
        FloatVector acc2 = FloatVector.zero(F);
        FloatVector acc3 = FloatVector.zero(F);
        for (int bound = n - 4 * L; i <= bound; i += 4 * L) {
            acc0 = FloatVector.fromArray(F, a, aOff + i).fma(FloatVector.fromArray(F, b, bOff + i), acc0);
            acc1 = FloatVector.fromArray(F, a, aOff + i + L).fma(FloatVector.fromArray(F, b, bOff + i + L), acc1);
            acc2 = FloatVector.fromArray(F, a, aOff + i + 2 * L).fma(FloatVector.fromArray(F, b, bOff + i + 2 * L), acc2);
            acc3 = FloatVector.fromArray(F, a, aOff + i + 3 * L).fma(FloatVector.fromArray(F, b, bOff + i + 3 * L), acc3);
        }
        for (int bound = n - L; i <= bound; i += L) {
            acc0 = FloatVector.fromArray(F, a, aOff + i).fma(FloatVector.fromArray(F, b, bOff + i), acc0);
        }
        acc0.add(acc1).add(acc2.add(acc3)).intoArray(lanes, 0);
        float sum = sumLanes(lanes, 0);
        for (; i < n; i++) {
            sum += a[aOff + i] * b[bOff + i];
        }
        return sum;
    }

    /*
     * The matmul kernels (matvec, tile) give each output ONE accumulator vector over the row (steps of L lanes), then
     * the fixed-order horizontal sum, then the scalar tail in order: the same arithmetic for an output whichever
     * kernel computes it. Register blocking then comes from computing several outputs at once, never from splitting
     * one output over several accumulators (which would tie its bits to the blocking). On the development machine
     * (AVX-512, one 512-bit load per cycle) the loads bound these loops: a 4x4 tile issues 8 loads per 16
     * multiply-adds where four-row-times-one-x blocking with four accumulators per row issued 20 per 16, and the
     * single-x matvec shares each x load between four weight rows.
     */

    @Override
    public void matvec(Matrix w, int row, int count, float[] x, int xOff, float[] out, int outOff) {
        int n = w.cols();
        if (count == 4 && w.dtype() == DType.BF16) {
            matvec4Bf16(w.data(), (long) row * n * 2, n, x, xOff, out, outOff);
            return;
        }
        float[] rows = rowScratch(count * n);
        for (int q = 0; q < count; q++) {
            decodeRow(w, row + q, rows, q * n);
        }
        tile(rows, 0, count, x, xOff, 1, n, out, outOff, 0);
    }

    @Override
    public void tile(float[] w, int wOff, int wCount, float[] x, int xOff, int xCount, int n, float[] out,
            int outOff, int outStride) {
        if (wCount == 4 && xCount == 4) {
            tile4x4(w, wOff, x, xOff, n, out, outOff, outStride);
            return;
        }
        for (int r = 0; r < xCount; r++) {
            if (wCount == 4) {
                tile4x1(w, wOff, x, xOff + r * n, n, out, outOff + r * outStride);
            } else {
                for (int q = 0; q < wCount; q++) {
                    out[outOff + r * outStride + q] = tile1x1(w, wOff + q * n, x, xOff + r * n, n);
                }
            }
        }
    }

    /** Four bf16 rows of a matrix (at byte offset base, n columns) times x: the weight bytes widened in registers. */
    private static void matvec4Bf16(MemorySegment seg, long base, int n, float[] x, int xOff, float[] out,
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
        c0.intoArray(lanes, 0);
        c1.intoArray(lanes, L);
        c2.intoArray(lanes, 2 * L);
        c3.intoArray(lanes, 3 * L);
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

    /** Four float rows of w (stride n) times one row of x. */
    private static void tile4x1(float[] w, int wOff, float[] x, int xOff, int n, float[] out, int outOff) {
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
        c0.intoArray(lanes, 0);
        c1.intoArray(lanes, L);
        c2.intoArray(lanes, 2 * L);
        c3.intoArray(lanes, 3 * L);
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
    private static float tile1x1(float[] w, int wOff, float[] x, int xOff, int n) {
        float[] lanes = LANES.get();
        FloatVector c = FloatVector.zero(F);
        int i = 0;
        for (int bound = n - L; i <= bound; i += L) {
            c = FloatVector.fromArray(F, w, wOff + i).fma(FloatVector.fromArray(F, x, xOff + i), c);
        }
        c.intoArray(lanes, 0);
        float s = sumLanes(lanes, 0);
        for (; i < n; i++) {
            s += w[wOff + i] * x[xOff + i];
        }
        return s;
    }

    /** Four float rows of w (stride n) times four rows of x (stride n): 16 outputs, 8 loads per 16 multiply-adds. */
    private static void tile4x4(float[] w, int wOff, float[] x, int xOff, int n, float[] out, int outOff,
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
        c00.intoArray(lanes, 0);
        c01.intoArray(lanes, L);
        c02.intoArray(lanes, 2 * L);
        c03.intoArray(lanes, 3 * L);
        c10.intoArray(lanes, 4 * L);
        c11.intoArray(lanes, 5 * L);
        c12.intoArray(lanes, 6 * L);
        c13.intoArray(lanes, 7 * L);
        c20.intoArray(lanes, 8 * L);
        c21.intoArray(lanes, 9 * L);
        c22.intoArray(lanes, 10 * L);
        c23.intoArray(lanes, 11 * L);
        c30.intoArray(lanes, 12 * L);
        c31.intoArray(lanes, 13 * L);
        c32.intoArray(lanes, 14 * L);
        c33.intoArray(lanes, 15 * L);
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

    @Override
    public float dotRow(Matrix w, int row, float[] x, int xOff) {
        int cols = w.cols();
        MemorySegment seg = w.data();
        return switch (w.dtype()) {
            case BF16 -> dotBf16(seg, (long) row * cols * 2, x, xOff, cols);
            case F32 -> dotF32(seg, (long) row * cols * 4, x, xOff, cols);
            case F16 -> {
                float[] tmp = rowScratch(cols);
                tail.decodeRow(w, row, tmp, 0);
                yield dot(tmp, 0, x, xOff, cols);
            }
        };
    }

    private static float dotBf16(MemorySegment seg, long base, float[] x, int xOff, int n) {
        float[] lanes = LANES.get();
        int i = 0;
        FloatVector acc0 = FloatVector.zero(F);
        FloatVector acc1 = FloatVector.zero(F);
        FloatVector acc2 = FloatVector.zero(F);
        FloatVector acc3 = FloatVector.zero(F);
        for (int bound = n - 4 * L; i <= bound; i += 4 * L) {
            long b = base + 2L * i;
            acc0 = ((IntVector) ShortVector.fromMemorySegment(S, seg, b, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(FloatVector.fromArray(F, x, xOff + i), acc0);
            acc1 = ((IntVector) ShortVector.fromMemorySegment(S, seg, b + 2L * L, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(FloatVector.fromArray(F, x, xOff + i + L), acc1);
            acc2 = ((IntVector) ShortVector.fromMemorySegment(S, seg, b + 4L * L, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(FloatVector.fromArray(F, x, xOff + i + 2 * L), acc2);
            acc3 = ((IntVector) ShortVector.fromMemorySegment(S, seg, b + 6L * L, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(FloatVector.fromArray(F, x, xOff + i + 3 * L), acc3);
        }
        for (int bound = n - L; i <= bound; i += L) {
            acc0 = ((IntVector) ShortVector.fromMemorySegment(S, seg, base + 2L * i, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(FloatVector.fromArray(F, x, xOff + i), acc0);
        }
        acc0.add(acc1).add(acc2.add(acc3)).intoArray(lanes, 0);
        float sum = sumLanes(lanes, 0);
        for (; i < n; i++) {
            short bits = seg.get(io.tqserve.backend.Layouts.SHORT_LE, base + 2L * i);
            sum += Float.intBitsToFloat((bits & 0xFFFF) << 16) * x[xOff + i];
        }
        return sum;
    }

    private static float dotF32(MemorySegment seg, long base, float[] x, int xOff, int n) {
        float[] lanes = LANES.get();
        int i = 0;
        FloatVector acc0 = FloatVector.zero(F);
        FloatVector acc1 = FloatVector.zero(F);
        FloatVector acc2 = FloatVector.zero(F);
        FloatVector acc3 = FloatVector.zero(F);
        for (int bound = n - 4 * L; i <= bound; i += 4 * L) {
            long b = base + 4L * i;
            acc0 = FloatVector.fromMemorySegment(F, seg, b, LE).fma(FloatVector.fromArray(F, x, xOff + i), acc0);
            acc1 = FloatVector.fromMemorySegment(F, seg, b + 4L * L, LE).fma(FloatVector.fromArray(F, x, xOff + i + L), acc1);
            acc2 = FloatVector.fromMemorySegment(F, seg, b + 8L * L, LE).fma(FloatVector.fromArray(F, x, xOff + i + 2 * L), acc2);
            acc3 = FloatVector.fromMemorySegment(F, seg, b + 12L * L, LE).fma(FloatVector.fromArray(F, x, xOff + i + 3 * L), acc3);
        }
        for (int bound = n - L; i <= bound; i += L) {
            acc0 = FloatVector.fromMemorySegment(F, seg, base + 4L * i, LE).fma(FloatVector.fromArray(F, x, xOff + i), acc0);
        }
        acc0.add(acc1).add(acc2.add(acc3)).intoArray(lanes, 0);
        float sum = sumLanes(lanes, 0);
        for (; i < n; i++) {
            sum += seg.get(io.tqserve.backend.Layouts.FLOAT_LE, base + 4L * i) * x[xOff + i];
        }
        return sum;
    }

    @Override
    public void decodeRow(Matrix w, int row, float[] dst, int dOff) {
        if (w.dtype() != DType.BF16) {
            tail.decodeRow(w, row, dst, dOff);
            return;
        }
        int n = w.cols();
        long base = (long) row * n * 2;
        MemorySegment seg = w.data();
        int i = 0;
        for (int bound = n - L; i <= bound; i += L) {
            ((IntVector) ShortVector.fromMemorySegment(S, seg, base + 2L * i, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().intoArray(dst, dOff + i);
        }
        for (; i < n; i++) {
            short bits = seg.get(io.tqserve.backend.Layouts.SHORT_LE, base + 2L * i);
            dst[dOff + i] = Float.intBitsToFloat((bits & 0xFFFF) << 16);
        }
    }

    @Override
    public void axpyRow(float a, Matrix w, int row, float[] y, int yOff) {
        if (w.dtype() != DType.BF16) {
            tail.axpyRow(a, w, row, y, yOff);
            return;
        }
        int n = w.cols();
        long base = (long) row * n * 2;
        MemorySegment seg = w.data();
        FloatVector av = FloatVector.broadcast(F, a);
        int i = 0;
        for (int bound = n - L; i <= bound; i += L) {
            ((IntVector) ShortVector.fromMemorySegment(S, seg, base + 2L * i, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(av, FloatVector.fromArray(F, y, yOff + i)).intoArray(y, yOff + i);
        }
        for (; i < n; i++) {
            short bits = seg.get(io.tqserve.backend.Layouts.SHORT_LE, base + 2L * i);
            y[yOff + i] += a * Float.intBitsToFloat((bits & 0xFFFF) << 16);
        }
    }

    @Override
    public void axpy(float a, float[] x, int xOff, float[] y, int yOff, int n) {
        int i = 0;
        FloatVector av = FloatVector.broadcast(F, a);
        for (int bound = n - L; i <= bound; i += L) {
            FloatVector.fromArray(F, x, xOff + i).fma(av, FloatVector.fromArray(F, y, yOff + i)).intoArray(y, yOff + i);
        }
        for (; i < n; i++) {
            y[yOff + i] += a * x[xOff + i];
        }
    }

    @Override
    public void scale(float[] x, int off, int n, float a) {
        int i = 0;
        for (int bound = n - L; i <= bound; i += L) {
            FloatVector.fromArray(F, x, off + i).mul(a).intoArray(x, off + i);
        }
        for (; i < n; i++) {
            x[off + i] *= a;
        }
    }

    @Override
    public void rmsnorm(float[] out, int oOff, float[] x, int xOff, float[] weight, int n, float eps) {
        float ss = dot(x, xOff, x, xOff, n);
        float inv = (float) (1.0 / Math.sqrt(ss / n + eps));
        int i = 0;
        for (int bound = n - L; i <= bound; i += L) {
            FloatVector.fromArray(F, x, xOff + i).mul(inv).mul(FloatVector.fromArray(F, weight, i))
                    .intoArray(out, oOff + i);
        }
        for (; i < n; i++) {
            out[oOff + i] = weight[i] * (x[xOff + i] * inv);
        }
    }

    @Override
    public void softmax(float[] x, int off, int n) {
        int i = 0;
        FloatVector mv = FloatVector.broadcast(F, Float.NEGATIVE_INFINITY);
        for (int bound = n - L; i <= bound; i += L) {
            mv = mv.max(FloatVector.fromArray(F, x, off + i));
        }
        float max = mv.reduceLanes(VectorOperators.MAX);
        for (; i < n; i++) {
            max = Math.max(max, x[off + i]);
        }
        // exp stays scalar: Math.exp is an intrinsic and its float rounding matches the scalar twin exactly.
        float sum = 0f;
        for (int j = 0; j < n; j++) {
            float e = (float) Math.exp(x[off + j] - max);
            x[off + j] = e;
            sum += e;
        }
        scale(x, off, n, 1f / sum);
    }

    @Override
    public void swiglu(float[] gate, int gOff, float[] up, int uOff, int n) {
        tail.swiglu(gate, gOff, up, uOff, n);
    }

    @Override
    public void add(float[] x, int xOff, float[] y, int yOff, int n) {
        int i = 0;
        for (int bound = n - L; i <= bound; i += L) {
            FloatVector.fromArray(F, x, xOff + i).add(FloatVector.fromArray(F, y, yOff + i)).intoArray(x, xOff + i);
        }
        for (; i < n; i++) {
            x[xOff + i] += y[yOff + i];
        }
    }
}
