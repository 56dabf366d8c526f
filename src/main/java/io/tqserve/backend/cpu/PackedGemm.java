package io.tqserve.backend.cpu;

import static io.tqserve.backend.cpu.VectorKernels.F;
import static io.tqserve.backend.cpu.VectorKernels.I;
import static io.tqserve.backend.cpu.VectorKernels.L;
import static io.tqserve.backend.cpu.VectorKernels.LANES;
import static io.tqserve.backend.cpu.VectorKernels.LE;
import static io.tqserve.backend.cpu.VectorKernels.S;
import static io.tqserve.backend.cpu.VectorKernels.sumLanes;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;

/**
 * The multi-row bf16 matmul (several activation rows: a batched decode step, a verification pass, a prefill) on the
 * weights repacked at load ({@link VectorMatmul#pack4}). Scalar twin: {@link ScalarKernels#tile} on the rows decoded
 * to floats ({@code PackedGemmTest}).
 *
 * <p>One pass over each weight matrix serves every activation row: a thread takes a block of output rows, and for
 * each group of four packed weight rows (one contiguous stream, which the hardware prefetcher follows as the decode
 * kernel's) computes the group against all activation rows before it moves on. Two ways to do that, chosen by the
 * number of rows:
 *
 * <ul>
 *   <li>up to {@link #DIRECT_ROWS} rows (decode batches, short verification passes): register tiles read the packed
 *       words directly, four weight rows by two activation rows (AVX2's 16 registers) or by four (AVX-512's 32);
 *       the group's 16·L-byte steps stay in L1 between the tiles of one group, so memory sees each weight once;</li>
 *   <li>more rows (prefill): the group is widened once into four float rows in a per-thread scratch that stays in
 *       L1, and the float tiles of {@link VectorMatmul} run over it, so the widening is paid once per group, not
 *       once per pair of activation rows.</li>
 * </ul>
 *
 * <p>Either way each output keeps the arithmetic of {@link VectorMatmul#matvec4Packed}: one accumulator vector
 * whose lane j adds column {@code i+j}, then {@code i+L+j}, step after step, then {@link VectorKernels#sumLanes}.
 * So a row's numbers are those it gets alone (batch invariance), whichever path and tile computes it. Dot-product
 * tiles (one accumulator per output, summed horizontally once per row of 2048 or more columns) instead of the
 * outer-product micro-kernels of BLAS are the price of that invariance; the horizontal sums are a fraction of a
 * percent of the work at these widths.
 */
final class PackedGemm {
    /** Activation rows up to which the direct packed tiles run; above it, widen once then float tiles. */
    static final int DIRECT_ROWS = Integer.getInteger("tqserve.cpu.gemm-direct-rows", 16);

    /** With 256-bit vectors, 2x4 tiles (each word widened once per four rows) instead of 4x2 (experiment switch). */
    static final boolean TILE_2X4 = Boolean.getBoolean("tqserve.cpu.gemm-2x4");

    private static final ThreadLocal<float[]> WIDE = new ThreadLocal<>();

    private PackedGemm() {
    }

    /**
     * Output rows [j, j+4) (one packed group at byte offset base, n columns) for activation rows [0, rows) of x
     * (row r at xOff + r·n): out[outOff + r·outStride + q].
     */
    static void group(MemorySegment pack, long base, int n, float[] x, int xOff, int rows, float[] out, int outOff,
            int outStride) {
        if (rows <= DIRECT_ROWS) {
            int r = 0;
            for (; r + 4 <= rows; r += 4) {
                if (VectorKernels.WIDE_TILES) {
                    tile4x4Packed(pack, base, n, x, xOff + r * n, out, outOff + r * outStride, outStride);
                } else if (TILE_2X4) {
                    tile2x4Packed(pack, base, 0, n, x, xOff + r * n, out, outOff + r * outStride, outStride);
                    tile2x4Packed(pack, base, 2, n, x, xOff + r * n, out, outOff + r * outStride, outStride);
                } else {
                    tile4x2Packed(pack, base, n, x, xOff + r * n, out, outOff + r * outStride, outStride);
                    tile4x2Packed(pack, base, n, x, xOff + (r + 2) * n, out, outOff + (r + 2) * outStride,
                            outStride);
                }
            }
            for (; r + 2 <= rows; r += 2) {
                tile4x2Packed(pack, base, n, x, xOff + r * n, out, outOff + r * outStride, outStride);
            }
            for (; r < rows; r++) {
                VectorMatmul.matvec4Packed(pack, base, n, x, xOff + r * n, out, outOff + r * outStride);
            }
            return;
        }
        float[] w = wide(4 * n);
        unpack4(pack, base, n, w, 0);
        VectorKernels kernels = KERNELS;
        for (int r = 0; r < rows; r += 4) {
            kernels.tile(w, 0, 4, x, xOff + r * n, Math.min(4, rows - r), n, out, outOff + r * outStride, outStride);
        }
    }

    private static final VectorKernels KERNELS = new VectorKernels();

    private static float[] wide(int n) {
        float[] s = WIDE.get();
        if (s == null || s.length < n) {
            s = new float[n];
            WIDE.set(s);
        }
        return s;
    }

    /**
     * Widens one packed group (four rows, n columns, at byte offset base) into four float rows in column order at
     * dst[dOff + q·n]: exactly the floats the mapped bf16 rows hold.
     */
    static void unpack4(MemorySegment pack, long base, int n, float[] dst, int dOff) {
        long step = 4L * L;
        int pairs = n / (2 * L);
        for (int p = 0; p < pairs; p++) {
            int i = 2 * L * p;
            long b = base + 8L * i;
            IntVector w0 = IntVector.fromMemorySegment(I, pack, b, LE);
            IntVector w1 = IntVector.fromMemorySegment(I, pack, b + step, LE);
            IntVector w2 = IntVector.fromMemorySegment(I, pack, b + 2 * step, LE);
            IntVector w3 = IntVector.fromMemorySegment(I, pack, b + 3 * step, LE);
            w0.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().intoArray(dst, dOff + i);
            w0.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats().intoArray(dst, dOff + i + L);
            w1.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().intoArray(dst, dOff + n + i);
            w1.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats().intoArray(dst, dOff + n + i + L);
            w2.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().intoArray(dst, dOff + 2 * n + i);
            w2.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats().intoArray(dst, dOff + 2 * n + i + L);
            w3.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().intoArray(dst, dOff + 3 * n + i);
            w3.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats().intoArray(dst, dOff + 3 * n + i + L);
        }
        if (n % (2 * L) != 0) { // the odd last L-column step is stored in column order
            int i = n - L;
            long b = base + 8L * i;
            long half = 2L * L;
            for (int q = 0; q < 4; q++) {
                ((IntVector) ShortVector.fromMemorySegment(S, pack, b + q * half, LE)
                        .convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16)
                        .reinterpretAsFloats().intoArray(dst, dOff + q * n + i);
            }
        }
    }

    /**
     * Four packed weight rows times two activation rows (x rows at xOff and xOff + n): 8 accumulators, the words
     * loaded once for both rows. Within AVX2's 16 registers: 8 accumulators, 4 activation vectors, 2 widened halves.
     */
    static void tile4x2Packed(MemorySegment pack, long base, int n, float[] x, int xOff, float[] out, int outOff,
            int outStride) {
        float[] lanes = LANES.get();
        long step = 4L * L;
        int x0 = xOff;
        int x1 = xOff + n;
        FloatVector c00 = FloatVector.zero(F), c01 = FloatVector.zero(F), c02 = FloatVector.zero(F), c03 = FloatVector.zero(F);
        FloatVector c10 = FloatVector.zero(F), c11 = FloatVector.zero(F), c12 = FloatVector.zero(F), c13 = FloatVector.zero(F);
        int pairs = n / (2 * L);
        for (int p = 0; p < pairs; p++) {
            int i = 2 * L * p;
            long b = base + 8L * i;
            FloatVector l0 = FloatVector.fromArray(F, x, x0 + i);
            FloatVector h0 = FloatVector.fromArray(F, x, x0 + i + L);
            FloatVector l1 = FloatVector.fromArray(F, x, x1 + i);
            FloatVector h1 = FloatVector.fromArray(F, x, x1 + i + L);
            IntVector w = IntVector.fromMemorySegment(I, pack, b, LE);
            FloatVector lo = w.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            FloatVector hi = w.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats();
            c00 = hi.fma(h0, lo.fma(l0, c00));
            c10 = hi.fma(h1, lo.fma(l1, c10));
            w = IntVector.fromMemorySegment(I, pack, b + step, LE);
            lo = w.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            hi = w.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats();
            c01 = hi.fma(h0, lo.fma(l0, c01));
            c11 = hi.fma(h1, lo.fma(l1, c11));
            w = IntVector.fromMemorySegment(I, pack, b + 2 * step, LE);
            lo = w.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            hi = w.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats();
            c02 = hi.fma(h0, lo.fma(l0, c02));
            c12 = hi.fma(h1, lo.fma(l1, c12));
            w = IntVector.fromMemorySegment(I, pack, b + 3 * step, LE);
            lo = w.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            hi = w.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats();
            c03 = hi.fma(h0, lo.fma(l0, c03));
            c13 = hi.fma(h1, lo.fma(l1, c13));
        }
        if (n % (2 * L) != 0) { // one last L-column step, stored as in pack4's mapped-order tail
            int i = n - L;
            long b = base + 8L * i;
            long half = 2L * L;
            FloatVector v0 = FloatVector.fromArray(F, x, x0 + i);
            FloatVector v1 = FloatVector.fromArray(F, x, x1 + i);
            FloatVector u = ((IntVector) ShortVector.fromMemorySegment(S, pack, b, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            c00 = u.fma(v0, c00);
            c10 = u.fma(v1, c10);
            u = ((IntVector) ShortVector.fromMemorySegment(S, pack, b + half, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            c01 = u.fma(v0, c01);
            c11 = u.fma(v1, c11);
            u = ((IntVector) ShortVector.fromMemorySegment(S, pack, b + 2 * half, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            c02 = u.fma(v0, c02);
            c12 = u.fma(v1, c12);
            u = ((IntVector) ShortVector.fromMemorySegment(S, pack, b + 3 * half, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
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
            for (int q = 0; q < 4; q++) {
                out[outOff + r * outStride + q] = sumLanes(lanes, (4 * r + q) * L);
            }
        }
    }

    /**
     * Two of a group's packed weight rows (q and q+1) times four activation rows: 8 accumulators, each word widened
     * once for four rows (the 4x2 tile widens it for two), the halves' activations loaded as the FMAs need them and
     * the words loaded again for the high halves (from L1) to stay within AVX2's 16 registers.
     */
    static void tile2x4Packed(MemorySegment pack, long base, int q, int n, float[] x, int xOff, float[] out,
            int outOff, int outStride) {
        float[] lanes = LANES.get();
        long step = 4L * L;
        long qa = base + q * step;
        long qb = qa + step;
        int x0 = xOff;
        int x1 = xOff + n;
        int x2 = xOff + 2 * n;
        int x3 = xOff + 3 * n;
        FloatVector c0a = FloatVector.zero(F), c1a = FloatVector.zero(F), c2a = FloatVector.zero(F), c3a = FloatVector.zero(F);
        FloatVector c0b = FloatVector.zero(F), c1b = FloatVector.zero(F), c2b = FloatVector.zero(F), c3b = FloatVector.zero(F);
        int pairs = n / (2 * L);
        for (int p = 0; p < pairs; p++) {
            int i = 2 * L * p;
            long b = 8L * i;
            FloatVector v0 = FloatVector.fromArray(F, x, x0 + i);
            FloatVector v1 = FloatVector.fromArray(F, x, x1 + i);
            FloatVector v2 = FloatVector.fromArray(F, x, x2 + i);
            FloatVector v3 = FloatVector.fromArray(F, x, x3 + i);
            FloatVector u = IntVector.fromMemorySegment(I, pack, qa + b, LE).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            c0a = u.fma(v0, c0a);
            c1a = u.fma(v1, c1a);
            c2a = u.fma(v2, c2a);
            c3a = u.fma(v3, c3a);
            u = IntVector.fromMemorySegment(I, pack, qb + b, LE).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            c0b = u.fma(v0, c0b);
            c1b = u.fma(v1, c1b);
            c2b = u.fma(v2, c2b);
            c3b = u.fma(v3, c3b);
            v0 = FloatVector.fromArray(F, x, x0 + i + L);
            v1 = FloatVector.fromArray(F, x, x1 + i + L);
            v2 = FloatVector.fromArray(F, x, x2 + i + L);
            v3 = FloatVector.fromArray(F, x, x3 + i + L);
            u = IntVector.fromMemorySegment(I, pack, qa + b, LE).lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats();
            c0a = u.fma(v0, c0a);
            c1a = u.fma(v1, c1a);
            c2a = u.fma(v2, c2a);
            c3a = u.fma(v3, c3a);
            u = IntVector.fromMemorySegment(I, pack, qb + b, LE).lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats();
            c0b = u.fma(v0, c0b);
            c1b = u.fma(v1, c1b);
            c2b = u.fma(v2, c2b);
            c3b = u.fma(v3, c3b);
        }
        if (n % (2 * L) != 0) {
            int i = n - L;
            long half = 2L * L;
            long b = base + 8L * i;
            FloatVector v0 = FloatVector.fromArray(F, x, x0 + i);
            FloatVector v1 = FloatVector.fromArray(F, x, x1 + i);
            FloatVector v2 = FloatVector.fromArray(F, x, x2 + i);
            FloatVector v3 = FloatVector.fromArray(F, x, x3 + i);
            FloatVector u = ((IntVector) ShortVector.fromMemorySegment(S, pack, b + q * half, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            c0a = u.fma(v0, c0a);
            c1a = u.fma(v1, c1a);
            c2a = u.fma(v2, c2a);
            c3a = u.fma(v3, c3a);
            u = ((IntVector) ShortVector.fromMemorySegment(S, pack, b + (q + 1) * half, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            c0b = u.fma(v0, c0b);
            c1b = u.fma(v1, c1b);
            c2b = u.fma(v2, c2b);
            c3b = u.fma(v3, c3b);
        }
        ((FloatVector) F.vectorType().cast(c0a)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c1a)).intoArray(lanes, L);
        ((FloatVector) F.vectorType().cast(c2a)).intoArray(lanes, 2 * L);
        ((FloatVector) F.vectorType().cast(c3a)).intoArray(lanes, 3 * L);
        ((FloatVector) F.vectorType().cast(c0b)).intoArray(lanes, 4 * L);
        ((FloatVector) F.vectorType().cast(c1b)).intoArray(lanes, 5 * L);
        ((FloatVector) F.vectorType().cast(c2b)).intoArray(lanes, 6 * L);
        ((FloatVector) F.vectorType().cast(c3b)).intoArray(lanes, 7 * L);
        for (int r = 0; r < 4; r++) {
            out[outOff + r * outStride + q] = sumLanes(lanes, r * L);
            out[outOff + r * outStride + q + 1] = sumLanes(lanes, (4 + r) * L);
        }
    }

    /** Four packed weight rows times four activation rows: 16 accumulators, for AVX-512's 32 registers. */
    static void tile4x4Packed(MemorySegment pack, long base, int n, float[] x, int xOff, float[] out, int outOff,
            int outStride) {
        float[] lanes = LANES.get();
        long step = 4L * L;
        int x0 = xOff;
        int x1 = xOff + n;
        int x2 = xOff + 2 * n;
        int x3 = xOff + 3 * n;
        FloatVector c00 = FloatVector.zero(F), c01 = FloatVector.zero(F), c02 = FloatVector.zero(F), c03 = FloatVector.zero(F);
        FloatVector c10 = FloatVector.zero(F), c11 = FloatVector.zero(F), c12 = FloatVector.zero(F), c13 = FloatVector.zero(F);
        FloatVector c20 = FloatVector.zero(F), c21 = FloatVector.zero(F), c22 = FloatVector.zero(F), c23 = FloatVector.zero(F);
        FloatVector c30 = FloatVector.zero(F), c31 = FloatVector.zero(F), c32 = FloatVector.zero(F), c33 = FloatVector.zero(F);
        int pairs = n / (2 * L);
        for (int p = 0; p < pairs; p++) {
            int i = 2 * L * p;
            long b = base + 8L * i;
            FloatVector l0 = FloatVector.fromArray(F, x, x0 + i);
            FloatVector h0 = FloatVector.fromArray(F, x, x0 + i + L);
            FloatVector l1 = FloatVector.fromArray(F, x, x1 + i);
            FloatVector h1 = FloatVector.fromArray(F, x, x1 + i + L);
            FloatVector l2 = FloatVector.fromArray(F, x, x2 + i);
            FloatVector h2 = FloatVector.fromArray(F, x, x2 + i + L);
            FloatVector l3 = FloatVector.fromArray(F, x, x3 + i);
            FloatVector h3 = FloatVector.fromArray(F, x, x3 + i + L);
            IntVector w = IntVector.fromMemorySegment(I, pack, b, LE);
            FloatVector lo = w.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            FloatVector hi = w.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats();
            c00 = hi.fma(h0, lo.fma(l0, c00));
            c10 = hi.fma(h1, lo.fma(l1, c10));
            c20 = hi.fma(h2, lo.fma(l2, c20));
            c30 = hi.fma(h3, lo.fma(l3, c30));
            w = IntVector.fromMemorySegment(I, pack, b + step, LE);
            lo = w.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            hi = w.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats();
            c01 = hi.fma(h0, lo.fma(l0, c01));
            c11 = hi.fma(h1, lo.fma(l1, c11));
            c21 = hi.fma(h2, lo.fma(l2, c21));
            c31 = hi.fma(h3, lo.fma(l3, c31));
            w = IntVector.fromMemorySegment(I, pack, b + 2 * step, LE);
            lo = w.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            hi = w.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats();
            c02 = hi.fma(h0, lo.fma(l0, c02));
            c12 = hi.fma(h1, lo.fma(l1, c12));
            c22 = hi.fma(h2, lo.fma(l2, c22));
            c32 = hi.fma(h3, lo.fma(l3, c32));
            w = IntVector.fromMemorySegment(I, pack, b + 3 * step, LE);
            lo = w.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            hi = w.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats();
            c03 = hi.fma(h0, lo.fma(l0, c03));
            c13 = hi.fma(h1, lo.fma(l1, c13));
            c23 = hi.fma(h2, lo.fma(l2, c23));
            c33 = hi.fma(h3, lo.fma(l3, c33));
        }
        if (n % (2 * L) != 0) {
            int i = n - L;
            long b = base + 8L * i;
            long half = 2L * L;
            FloatVector v0 = FloatVector.fromArray(F, x, x0 + i);
            FloatVector v1 = FloatVector.fromArray(F, x, x1 + i);
            FloatVector v2 = FloatVector.fromArray(F, x, x2 + i);
            FloatVector v3 = FloatVector.fromArray(F, x, x3 + i);
            FloatVector u = ((IntVector) ShortVector.fromMemorySegment(S, pack, b, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            c00 = u.fma(v0, c00);
            c10 = u.fma(v1, c10);
            c20 = u.fma(v2, c20);
            c30 = u.fma(v3, c30);
            u = ((IntVector) ShortVector.fromMemorySegment(S, pack, b + half, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            c01 = u.fma(v0, c01);
            c11 = u.fma(v1, c11);
            c21 = u.fma(v2, c21);
            c31 = u.fma(v3, c31);
            u = ((IntVector) ShortVector.fromMemorySegment(S, pack, b + 2 * half, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            c02 = u.fma(v0, c02);
            c12 = u.fma(v1, c12);
            c22 = u.fma(v2, c22);
            c32 = u.fma(v3, c32);
            u = ((IntVector) ShortVector.fromMemorySegment(S, pack, b + 3 * half, LE).convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
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
            for (int q = 0; q < 4; q++) {
                out[outOff + r * outStride + q] = sumLanes(lanes, (4 * r + q) * L);
            }
        }
    }
}
