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
    /** Per-thread lane buffer for the sequential horizontal sum. */
    private static final ThreadLocal<float[]> LANES = ThreadLocal.withInitial(() -> new float[L]);

    /*
     * Horizontal sums run lane 0 to lane L-1 in order, written out at each use (see above on helpers).
     * {@code reduceLanes(ADD)} may sum in any order and does so differently when interpreted than when compiled, which made the same input give different bits
     * before and after JIT warm-up; a fixed order keeps every result reproducible.
     */
    private final ThreadLocal<float[]> f16Rows = new ThreadLocal<>();

    private float[] f16Scratch(int n) {
        float[] s = f16Rows.get();
        if (s == null || s.length < n) {
            s = new float[n];
            f16Rows.set(s);
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
        float sum = 0f;
        for (int k = 0; k < L; k++) {
            sum += lanes[k];
        }
        for (; i < n; i++) {
            sum += a[aOff + i] * b[bOff + i];
        }
        return sum;
    }

    @Override
    public void dot4(float[] w, int wOff, int wStride, float[] x, int xOff, int n, float[] out) {
        float[] lanes = LANES.get();
        int o0 = wOff;
        int o1 = wOff + wStride;
        int o2 = wOff + 2 * wStride;
        int o3 = wOff + 3 * wStride;
        FloatVector a00 = FloatVector.zero(F), a01 = FloatVector.zero(F), a02 = FloatVector.zero(F), a03 = FloatVector.zero(F);
        FloatVector a10 = FloatVector.zero(F), a11 = FloatVector.zero(F), a12 = FloatVector.zero(F), a13 = FloatVector.zero(F);
        FloatVector a20 = FloatVector.zero(F), a21 = FloatVector.zero(F), a22 = FloatVector.zero(F), a23 = FloatVector.zero(F);
        FloatVector a30 = FloatVector.zero(F), a31 = FloatVector.zero(F), a32 = FloatVector.zero(F), a33 = FloatVector.zero(F);
        int i = 0;
        for (int bound = n - 4 * L; i <= bound; i += 4 * L) {
            FloatVector x0 = FloatVector.fromArray(F, x, xOff + i);
            FloatVector x1 = FloatVector.fromArray(F, x, xOff + i + L);
            FloatVector x2 = FloatVector.fromArray(F, x, xOff + i + 2 * L);
            FloatVector x3 = FloatVector.fromArray(F, x, xOff + i + 3 * L);
            a00 = FloatVector.fromArray(F, w, o0 + i).fma(x0, a00);
            a01 = FloatVector.fromArray(F, w, o0 + i + L).fma(x1, a01);
            a02 = FloatVector.fromArray(F, w, o0 + i + 2 * L).fma(x2, a02);
            a03 = FloatVector.fromArray(F, w, o0 + i + 3 * L).fma(x3, a03);
            a10 = FloatVector.fromArray(F, w, o1 + i).fma(x0, a10);
            a11 = FloatVector.fromArray(F, w, o1 + i + L).fma(x1, a11);
            a12 = FloatVector.fromArray(F, w, o1 + i + 2 * L).fma(x2, a12);
            a13 = FloatVector.fromArray(F, w, o1 + i + 3 * L).fma(x3, a13);
            a20 = FloatVector.fromArray(F, w, o2 + i).fma(x0, a20);
            a21 = FloatVector.fromArray(F, w, o2 + i + L).fma(x1, a21);
            a22 = FloatVector.fromArray(F, w, o2 + i + 2 * L).fma(x2, a22);
            a23 = FloatVector.fromArray(F, w, o2 + i + 3 * L).fma(x3, a23);
            a30 = FloatVector.fromArray(F, w, o3 + i).fma(x0, a30);
            a31 = FloatVector.fromArray(F, w, o3 + i + L).fma(x1, a31);
            a32 = FloatVector.fromArray(F, w, o3 + i + 2 * L).fma(x2, a32);
            a33 = FloatVector.fromArray(F, w, o3 + i + 3 * L).fma(x3, a33);
        }
        for (int bound = n - L; i <= bound; i += L) {
            FloatVector x0 = FloatVector.fromArray(F, x, xOff + i);
            a00 = FloatVector.fromArray(F, w, o0 + i).fma(x0, a00);
            a10 = FloatVector.fromArray(F, w, o1 + i).fma(x0, a10);
            a20 = FloatVector.fromArray(F, w, o2 + i).fma(x0, a20);
            a30 = FloatVector.fromArray(F, w, o3 + i).fma(x0, a30);
        }
        a00.add(a01).add(a02.add(a03)).intoArray(lanes, 0);
        float s0 = 0f;
        for (int k = 0; k < L; k++) {
            s0 += lanes[k];
        }
        a10.add(a11).add(a12.add(a13)).intoArray(lanes, 0);
        float s1 = 0f;
        for (int k = 0; k < L; k++) {
            s1 += lanes[k];
        }
        a20.add(a21).add(a22.add(a23)).intoArray(lanes, 0);
        float s2 = 0f;
        for (int k = 0; k < L; k++) {
            s2 += lanes[k];
        }
        a30.add(a31).add(a32.add(a33)).intoArray(lanes, 0);
        float s3 = 0f;
        for (int k = 0; k < L; k++) {
            s3 += lanes[k];
        }
        for (; i < n; i++) {
            float xi = x[xOff + i];
            s0 += w[o0 + i] * xi;
            s1 += w[o1 + i] * xi;
            s2 += w[o2 + i] * xi;
            s3 += w[o3 + i] * xi;
        }
        out[0] = s0;
        out[1] = s1;
        out[2] = s2;
        out[3] = s3;
    }

    @Override
    public float dotRow(Matrix w, int row, float[] x, int xOff) {
        int cols = w.cols();
        MemorySegment seg = w.data();
        return switch (w.dtype()) {
            case BF16 -> dotBf16(seg, (long) row * cols * 2, x, xOff, cols);
            case F32 -> dotF32(seg, (long) row * cols * 4, x, xOff, cols);
            case F16 -> {
                float[] tmp = f16Scratch(cols);
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
        float sum = 0f;
        for (int k = 0; k < L; k++) {
            sum += lanes[k];
        }
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
        float sum = 0f;
        for (int k = 0; k < L; k++) {
            sum += lanes[k];
        }
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
