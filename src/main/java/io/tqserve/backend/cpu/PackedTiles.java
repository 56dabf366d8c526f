package io.tqserve.backend.cpu;

import static io.tqserve.backend.cpu.VectorKernels.F;
import static io.tqserve.backend.cpu.VectorKernels.I;
import static io.tqserve.backend.cpu.VectorKernels.L;
import static io.tqserve.backend.cpu.VectorKernels.LE;
import static io.tqserve.backend.cpu.VectorKernels.S;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;

/**
 * Register tiles of {@link PackedGemm} over one block of a packed group's columns: the accumulator vectors come from
 * and go back to a per-thread array between blocks, so a group's columns can be walked in blocks that keep the
 * group's packed words and the activation rows' slices in L1 while every activation row of the pass runs over them
 * (a whole row of 2048 columns for four activation rows plus the group's words is 48 KB, more than a Zen 3 or Zen 5
 * L1). Storing an accumulator vector and loading it back changes no bit, and the blocks run the steps in order, so
 * lane j of an output's accumulator adds exactly what it adds in {@link VectorMatmul#matvec4Packed}: column
 * {@code i+j}, then {@code i+L+j}, step after step; the one-row kernel's bits, whatever the block size.
 *
 * <p>Accumulators of activation row r and weight row q of the group sit at {@code acc[accOff + (4·r + q)·L]}.
 * Steps are the pack's 2L-column pairs, {@code [p0, p1)}; the odd last L-column step of pack4's tail is
 * {@link #tail}. Scalar twin: {@link ScalarKernels#tile} on the rows decoded to floats ({@code PackedGemmTest}).
 */
final class PackedTiles {
    private PackedTiles() {
    }

    /** Four packed weight rows times four activation rows (16 accumulators), pair steps [p0, p1). */
    static void tile4x4(MemorySegment pack, long base, int n, float[] x, int xOff, int p0, int p1, float[] acc,
            int accOff) {
        long step = 4L * L;
        int x0 = xOff;
        int x1 = xOff + n;
        int x2 = xOff + 2 * n;
        int x3 = xOff + 3 * n;
        int a = accOff;
        FloatVector c00 = FloatVector.fromArray(F, acc, a), c01 = FloatVector.fromArray(F, acc, a + L);
        FloatVector c02 = FloatVector.fromArray(F, acc, a + 2 * L), c03 = FloatVector.fromArray(F, acc, a + 3 * L);
        FloatVector c10 = FloatVector.fromArray(F, acc, a + 4 * L), c11 = FloatVector.fromArray(F, acc, a + 5 * L);
        FloatVector c12 = FloatVector.fromArray(F, acc, a + 6 * L), c13 = FloatVector.fromArray(F, acc, a + 7 * L);
        FloatVector c20 = FloatVector.fromArray(F, acc, a + 8 * L), c21 = FloatVector.fromArray(F, acc, a + 9 * L);
        FloatVector c22 = FloatVector.fromArray(F, acc, a + 10 * L), c23 = FloatVector.fromArray(F, acc, a + 11 * L);
        FloatVector c30 = FloatVector.fromArray(F, acc, a + 12 * L), c31 = FloatVector.fromArray(F, acc, a + 13 * L);
        FloatVector c32 = FloatVector.fromArray(F, acc, a + 14 * L), c33 = FloatVector.fromArray(F, acc, a + 15 * L);
        for (int p = p0; p < p1; p++) {
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
        ((FloatVector) F.vectorType().cast(c00)).intoArray(acc, a);
        ((FloatVector) F.vectorType().cast(c01)).intoArray(acc, a + L);
        ((FloatVector) F.vectorType().cast(c02)).intoArray(acc, a + 2 * L);
        ((FloatVector) F.vectorType().cast(c03)).intoArray(acc, a + 3 * L);
        ((FloatVector) F.vectorType().cast(c10)).intoArray(acc, a + 4 * L);
        ((FloatVector) F.vectorType().cast(c11)).intoArray(acc, a + 5 * L);
        ((FloatVector) F.vectorType().cast(c12)).intoArray(acc, a + 6 * L);
        ((FloatVector) F.vectorType().cast(c13)).intoArray(acc, a + 7 * L);
        ((FloatVector) F.vectorType().cast(c20)).intoArray(acc, a + 8 * L);
        ((FloatVector) F.vectorType().cast(c21)).intoArray(acc, a + 9 * L);
        ((FloatVector) F.vectorType().cast(c22)).intoArray(acc, a + 10 * L);
        ((FloatVector) F.vectorType().cast(c23)).intoArray(acc, a + 11 * L);
        ((FloatVector) F.vectorType().cast(c30)).intoArray(acc, a + 12 * L);
        ((FloatVector) F.vectorType().cast(c31)).intoArray(acc, a + 13 * L);
        ((FloatVector) F.vectorType().cast(c32)).intoArray(acc, a + 14 * L);
        ((FloatVector) F.vectorType().cast(c33)).intoArray(acc, a + 15 * L);
    }

    /** Four packed weight rows times two activation rows (8 accumulators, AVX2's 16 registers), steps [p0, p1). */
    static void tile4x2(MemorySegment pack, long base, int n, float[] x, int xOff, int p0, int p1, float[] acc,
            int accOff) {
        long step = 4L * L;
        int x0 = xOff;
        int x1 = xOff + n;
        int a = accOff;
        FloatVector c00 = FloatVector.fromArray(F, acc, a), c01 = FloatVector.fromArray(F, acc, a + L);
        FloatVector c02 = FloatVector.fromArray(F, acc, a + 2 * L), c03 = FloatVector.fromArray(F, acc, a + 3 * L);
        FloatVector c10 = FloatVector.fromArray(F, acc, a + 4 * L), c11 = FloatVector.fromArray(F, acc, a + 5 * L);
        FloatVector c12 = FloatVector.fromArray(F, acc, a + 6 * L), c13 = FloatVector.fromArray(F, acc, a + 7 * L);
        for (int p = p0; p < p1; p++) {
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
        ((FloatVector) F.vectorType().cast(c00)).intoArray(acc, a);
        ((FloatVector) F.vectorType().cast(c01)).intoArray(acc, a + L);
        ((FloatVector) F.vectorType().cast(c02)).intoArray(acc, a + 2 * L);
        ((FloatVector) F.vectorType().cast(c03)).intoArray(acc, a + 3 * L);
        ((FloatVector) F.vectorType().cast(c10)).intoArray(acc, a + 4 * L);
        ((FloatVector) F.vectorType().cast(c11)).intoArray(acc, a + 5 * L);
        ((FloatVector) F.vectorType().cast(c12)).intoArray(acc, a + 6 * L);
        ((FloatVector) F.vectorType().cast(c13)).intoArray(acc, a + 7 * L);
    }

    /**
     * Two packed groups (eight weight rows, the second group's accumulators at {@code acc2Off}) times two activation
     * rows: 16 accumulators, for 512-bit vectors. Each activation vector serves eight weight rows where
     * {@link #tile4x4} uses it for four, halving the activation loads per multiply-add: at 512 bits those loads come
     * from L2 (the pass's activation slices do not fit L1) and bound the 4×4 tile.
     */
    static void tile8x2(MemorySegment pack, long base, long base2, int n, float[] x, int xOff, int p0, int p1,
            float[] acc, int accOff, float[] acc2, int acc2Off) {
        long step = 4L * L;
        int x0 = xOff;
        int x1 = xOff + n;
        int a = accOff;
        int e = acc2Off;
        FloatVector c000 = FloatVector.fromArray(F, acc, a);
        FloatVector c001 = FloatVector.fromArray(F, acc, a + L);
        FloatVector c002 = FloatVector.fromArray(F, acc, a + 2 * L);
        FloatVector c003 = FloatVector.fromArray(F, acc, a + 3 * L);
        FloatVector c010 = FloatVector.fromArray(F, acc, a + 4 * L);
        FloatVector c011 = FloatVector.fromArray(F, acc, a + 5 * L);
        FloatVector c012 = FloatVector.fromArray(F, acc, a + 6 * L);
        FloatVector c013 = FloatVector.fromArray(F, acc, a + 7 * L);
        FloatVector c100 = FloatVector.fromArray(F, acc2, e);
        FloatVector c101 = FloatVector.fromArray(F, acc2, e + L);
        FloatVector c102 = FloatVector.fromArray(F, acc2, e + 2 * L);
        FloatVector c103 = FloatVector.fromArray(F, acc2, e + 3 * L);
        FloatVector c110 = FloatVector.fromArray(F, acc2, e + 4 * L);
        FloatVector c111 = FloatVector.fromArray(F, acc2, e + 5 * L);
        FloatVector c112 = FloatVector.fromArray(F, acc2, e + 6 * L);
        FloatVector c113 = FloatVector.fromArray(F, acc2, e + 7 * L);
        for (int p = p0; p < p1; p++) {
            int i = 2 * L * p;
            long b = base + 8L * i;
            long b2 = base2 + 8L * i;
            FloatVector l0 = FloatVector.fromArray(F, x, x0 + i);
            FloatVector h0 = FloatVector.fromArray(F, x, x0 + i + L);
            FloatVector l1 = FloatVector.fromArray(F, x, x1 + i);
            FloatVector h1 = FloatVector.fromArray(F, x, x1 + i + L);
            IntVector w = IntVector.fromMemorySegment(I, pack, b, LE);
            FloatVector lo = w.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            FloatVector hi = w.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats();
            c000 = hi.fma(h0, lo.fma(l0, c000));
            c010 = hi.fma(h1, lo.fma(l1, c010));
            w = IntVector.fromMemorySegment(I, pack, b + step, LE);
            lo = w.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            hi = w.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats();
            c001 = hi.fma(h0, lo.fma(l0, c001));
            c011 = hi.fma(h1, lo.fma(l1, c011));
            w = IntVector.fromMemorySegment(I, pack, b + 2 * step, LE);
            lo = w.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            hi = w.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats();
            c002 = hi.fma(h0, lo.fma(l0, c002));
            c012 = hi.fma(h1, lo.fma(l1, c012));
            w = IntVector.fromMemorySegment(I, pack, b + 3 * step, LE);
            lo = w.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            hi = w.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats();
            c003 = hi.fma(h0, lo.fma(l0, c003));
            c013 = hi.fma(h1, lo.fma(l1, c013));
            w = IntVector.fromMemorySegment(I, pack, b2, LE);
            lo = w.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            hi = w.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats();
            c100 = hi.fma(h0, lo.fma(l0, c100));
            c110 = hi.fma(h1, lo.fma(l1, c110));
            w = IntVector.fromMemorySegment(I, pack, b2 + step, LE);
            lo = w.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            hi = w.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats();
            c101 = hi.fma(h0, lo.fma(l0, c101));
            c111 = hi.fma(h1, lo.fma(l1, c111));
            w = IntVector.fromMemorySegment(I, pack, b2 + 2 * step, LE);
            lo = w.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            hi = w.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats();
            c102 = hi.fma(h0, lo.fma(l0, c102));
            c112 = hi.fma(h1, lo.fma(l1, c112));
            w = IntVector.fromMemorySegment(I, pack, b2 + 3 * step, LE);
            lo = w.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            hi = w.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats();
            c103 = hi.fma(h0, lo.fma(l0, c103));
            c113 = hi.fma(h1, lo.fma(l1, c113));
        }
        ((FloatVector) F.vectorType().cast(c000)).intoArray(acc, a);
        ((FloatVector) F.vectorType().cast(c001)).intoArray(acc, a + L);
        ((FloatVector) F.vectorType().cast(c002)).intoArray(acc, a + 2 * L);
        ((FloatVector) F.vectorType().cast(c003)).intoArray(acc, a + 3 * L);
        ((FloatVector) F.vectorType().cast(c010)).intoArray(acc, a + 4 * L);
        ((FloatVector) F.vectorType().cast(c011)).intoArray(acc, a + 5 * L);
        ((FloatVector) F.vectorType().cast(c012)).intoArray(acc, a + 6 * L);
        ((FloatVector) F.vectorType().cast(c013)).intoArray(acc, a + 7 * L);
        ((FloatVector) F.vectorType().cast(c100)).intoArray(acc2, e);
        ((FloatVector) F.vectorType().cast(c101)).intoArray(acc2, e + L);
        ((FloatVector) F.vectorType().cast(c102)).intoArray(acc2, e + 2 * L);
        ((FloatVector) F.vectorType().cast(c103)).intoArray(acc2, e + 3 * L);
        ((FloatVector) F.vectorType().cast(c110)).intoArray(acc2, e + 4 * L);
        ((FloatVector) F.vectorType().cast(c111)).intoArray(acc2, e + 5 * L);
        ((FloatVector) F.vectorType().cast(c112)).intoArray(acc2, e + 6 * L);
        ((FloatVector) F.vectorType().cast(c113)).intoArray(acc2, e + 7 * L);
    }

    /**
     * Four packed weight rows times one activation row (4 accumulators), steps [p0, p1): the operations of
     * {@link VectorMatmul#matvec4Packed}'s loop, for the odd row of a pass.
     */
    static void tile4x1(MemorySegment pack, long base, float[] x, int xOff, int p0, int p1, float[] acc,
            int accOff) {
        long step = 4L * L;
        int a = accOff;
        FloatVector c0 = FloatVector.fromArray(F, acc, a);
        FloatVector c1 = FloatVector.fromArray(F, acc, a + L);
        FloatVector c2 = FloatVector.fromArray(F, acc, a + 2 * L);
        FloatVector c3 = FloatVector.fromArray(F, acc, a + 3 * L);
        for (int p = p0; p < p1; p++) {
            int i = 2 * L * p;
            long b = base + 8L * i;
            FloatVector xl = FloatVector.fromArray(F, x, xOff + i);
            FloatVector xh = FloatVector.fromArray(F, x, xOff + i + L);
            IntVector w0 = IntVector.fromMemorySegment(I, pack, b, LE);
            IntVector w1 = IntVector.fromMemorySegment(I, pack, b + step, LE);
            IntVector w2 = IntVector.fromMemorySegment(I, pack, b + 2 * step, LE);
            IntVector w3 = IntVector.fromMemorySegment(I, pack, b + 3 * step, LE);
            c0 = w0.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xl, c0);
            c1 = w1.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xl, c1);
            c2 = w2.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xl, c2);
            c3 = w3.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xl, c3);
            c0 = w0.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats().fma(xh, c0);
            c1 = w1.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats().fma(xh, c1);
            c2 = w2.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats().fma(xh, c2);
            c3 = w3.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats().fma(xh, c3);
        }
        ((FloatVector) F.vectorType().cast(c0)).intoArray(acc, a);
        ((FloatVector) F.vectorType().cast(c1)).intoArray(acc, a + L);
        ((FloatVector) F.vectorType().cast(c2)).intoArray(acc, a + 2 * L);
        ((FloatVector) F.vectorType().cast(c3)).intoArray(acc, a + 3 * L);
    }

    /**
     * The odd last L-column step (stored in column order, as pack4 writes it) for activation rows [0, rows) of x:
     * one multiply-add per output, as {@link VectorMatmul#matvec4Packed} adds it after its pairs.
     */
    static void tail(MemorySegment pack, long base, int n, float[] x, int xOff, int rows, float[] acc, int accOff) {
        int i = n - L;
        long b = base + 8L * i;
        long half = 2L * L;
        for (int q = 0; q < 4; q++) {
            FloatVector u = ((IntVector) ShortVector.fromMemorySegment(S, pack, b + q * half, LE)
                    .convertShape(VectorOperators.S2I, I, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
            for (int r = 0; r < rows; r++) {
                int a = accOff + (4 * r + q) * L;
                ((FloatVector) F.vectorType().cast(
                        u.fma(FloatVector.fromArray(F, x, xOff + r * n + i), FloatVector.fromArray(F, acc, a))))
                        .intoArray(acc, a);
            }
        }
    }
}
