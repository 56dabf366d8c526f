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
    // boxed on every call, which cuts decode bandwidth by a large factor depending on compilation order
    // (docs/benchmarks-journal.md, "Why the kernels look the way they do"). Accumulators are cast to F's vector
    // class (F.vectorType().cast) before they are stored after a loop, for the reason given at QuantizedLoops.
    static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
    /** Shorts with as many lanes as F: half the bit size. */
    static final VectorSpecies<Short> S =
            VectorSpecies.of(short.class, VectorShape.forBitSize(F.vectorBitSize() / 2));
    static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    static final int L = F.length();
    /**
     * 4x4 tiles (16 accumulators) only with 512-bit vectors, whose ISA has 32 vector registers; with 256-bit AVX2
     * (16 registers) the tiles are 4x2, which fit without spilling.
     */
    static final boolean WIDE_TILES = F.vectorBitSize() >= 512;

    private final ScalarKernels tail = new ScalarKernels();
    /** Per-thread lane buffer for the horizontal sums (room for the 16 outputs of a 4x4 tile). */
    static final ThreadLocal<float[]> LANES = ThreadLocal.withInitial(() -> new float[16 * L]);

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
        return sumLanes(lanes, off, L);
    }

    /**
     * {@link #sumLanes(float[], int)} over {@code width} lanes (a power of two), for kernels whose species is not
     * {@link #F} ({@link QuantizedVector}); callers pass a constant, so C2 keeps one branch.
     */
    static float sumLanes(float[] lanes, int off, int width) {
        // The common widths written out: values in registers, no stores.
        if (width == 16) {
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
        if (width == 8) {
            float b0 = lanes[off] + lanes[off + 4];
            float b1 = lanes[off + 1] + lanes[off + 5];
            float b2 = lanes[off + 2] + lanes[off + 6];
            float b3 = lanes[off + 3] + lanes[off + 7];
            return (b0 + b2) + (b1 + b3);
        }
        if (width == 4) {
            return (lanes[off] + lanes[off + 2]) + (lanes[off + 1] + lanes[off + 3]);
        }
        for (int w = width >> 1; w > 0; w >>= 1) {
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
        ((FloatVector) F.vectorType().cast(acc0.add(acc1).add(acc2.add(acc3)))).intoArray(lanes, 0);
        float sum = sumLanes(lanes, 0);
        for (; i < n; i++) {
            sum += a[aOff + i] * b[bOff + i];
        }
        return sum;
    }

    // The kernels behind matvec and tile, and why they look as they do: VectorMatmul.

    @Override
    public void matvec(Matrix w, int row, int count, float[] x, int xOff, float[] out, int outOff) {
        int n = w.cols();
        if (count == 4 && w.dtype() == DType.BF16) {
            VectorMatmul.matvec4Bf16(w.data(), (long) row * n * 2, n, x, xOff, out, outOff);
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
        if (wCount == 4) {
            if (xCount == 4 && WIDE_TILES) {
                VectorMatmul.tile4x4(w, wOff, x, xOff, n, out, outOff, outStride);
                return;
            }
            int r = 0;
            for (; r + 2 <= xCount; r += 2) {
                VectorMatmul.tile4x2(w, wOff, x, xOff + r * n, n, out, outOff + r * outStride, outStride);
            }
            for (; r < xCount; r++) {
                VectorMatmul.tile4x1(w, wOff, x, xOff + r * n, n, out, outOff + r * outStride);
            }
            return;
        }
        for (int r = 0; r < xCount; r++) {
            for (int q = 0; q < wCount; q++) {
                out[outOff + r * outStride + q] = VectorMatmul.tile1x1(w, wOff + q * n, x, xOff + r * n, n);
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
            case F16, U32 -> {
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
        ((FloatVector) F.vectorType().cast(acc0.add(acc1).add(acc2.add(acc3)))).intoArray(lanes, 0);
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
        ((FloatVector) F.vectorType().cast(acc0.add(acc1).add(acc2.add(acc3)))).intoArray(lanes, 0);
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
