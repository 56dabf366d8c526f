package io.tqserve.backend.cpu;

import static io.tqserve.backend.cpu.VectorKernels.L;
import static io.tqserve.backend.cpu.VectorKernels.LANES;
import static io.tqserve.backend.cpu.VectorKernels.LE;
import static io.tqserve.backend.cpu.VectorKernels.sumLanes;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link VectorMatmul#matvec4Packed} on 512-bit layouts (L = 16) computed with 256-bit vectors: each output's
 * 16-lane accumulator is held as two 8-lane halves (lanes 0-7 and 8-15), each half adding the same columns in the
 * same order as its lanes of the 512-bit accumulator (multiply-add is lane-wise), and the halves are stored side by
 * side before the same {@link VectorKernels#sumLanes} fold. So the bits are those of the 512-bit kernel and of
 * {@link PackedGemm}: batching still never changes a result, whichever kernel a machine picks
 * ({@link MatvecChoice}).
 *
 * <p>Why a second width for the same arithmetic: on AMD Zen 5 the 512-bit loop streamed weights at about 0.6 of
 * one thread's plain read rate where this loop, twice the loads and operations at half the width, reached about
 * 0.86 (docs/architecture.md, "CPU kernels"); which is faster depends on the machine, so the backend measures both.
 * Only used when the species is 512 bits; straight-line for the reason given in {@link VectorKernels}.
 */
final class HalfWidthMatvec {
    static final VectorSpecies<Float> H = FloatVector.SPECIES_256;
    static final VectorSpecies<Integer> HI = IntVector.SPECIES_256;
    static final VectorSpecies<Short> HS = ShortVector.SPECIES_128;
    /** Lanes of a half. */
    static final int HL = 8;

    private HalfWidthMatvec() {
    }

    /** Whether the kernel applies: the layout's species is exactly two halves wide. */
    static boolean applies() {
        return L == 2 * HL;
    }

    /** Same contract and result bits as {@link VectorMatmul#matvec4Packed}; needs {@link #applies()}. */
    static void matvec4Packed(MemorySegment seg, long base, int n, float[] x, int xOff, float[] out, int outOff) {
        float[] lanes = LANES.get();
        long step = 4L * L;
        long half = 4L * HL; // bytes of a half's 8 packed words
        FloatVector a0 = FloatVector.zero(H), a1 = FloatVector.zero(H), a2 = FloatVector.zero(H), a3 = FloatVector.zero(H);
        FloatVector b0 = FloatVector.zero(H), b1 = FloatVector.zero(H), b2 = FloatVector.zero(H), b3 = FloatVector.zero(H);
        int pairs = n / (2 * L);
        for (int p = 0; p < pairs; p++) {
            int i = 2 * L * p;
            long b = base + 8L * i;
            // aQ: lanes 0-7 of row Q (columns i+j, then i+L+j); bQ: lanes 8-15 (columns i+8+j, then i+L+8+j)
            FloatVector xl0 = FloatVector.fromArray(H, x, xOff + i);
            FloatVector xl1 = FloatVector.fromArray(H, x, xOff + i + HL);
            FloatVector xh0 = FloatVector.fromArray(H, x, xOff + i + L);
            FloatVector xh1 = FloatVector.fromArray(H, x, xOff + i + L + HL);
            IntVector w0 = IntVector.fromMemorySegment(HI, seg, b, LE);
            IntVector v0 = IntVector.fromMemorySegment(HI, seg, b + half, LE);
            IntVector w1 = IntVector.fromMemorySegment(HI, seg, b + step, LE);
            IntVector v1 = IntVector.fromMemorySegment(HI, seg, b + step + half, LE);
            IntVector w2 = IntVector.fromMemorySegment(HI, seg, b + 2 * step, LE);
            IntVector v2 = IntVector.fromMemorySegment(HI, seg, b + 2 * step + half, LE);
            IntVector w3 = IntVector.fromMemorySegment(HI, seg, b + 3 * step, LE);
            IntVector v3 = IntVector.fromMemorySegment(HI, seg, b + 3 * step + half, LE);
            a0 = w0.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xl0, a0);
            b0 = v0.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xl1, b0);
            a1 = w1.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xl0, a1);
            b1 = v1.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xl1, b1);
            a2 = w2.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xl0, a2);
            b2 = v2.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xl1, b2);
            a3 = w3.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xl0, a3);
            b3 = v3.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(xl1, b3);
            a0 = w0.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats().fma(xh0, a0);
            b0 = v0.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats().fma(xh1, b0);
            a1 = w1.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats().fma(xh0, a1);
            b1 = v1.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats().fma(xh1, b1);
            a2 = w2.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats().fma(xh0, a2);
            b2 = v2.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats().fma(xh1, b2);
            a3 = w3.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats().fma(xh0, a3);
            b3 = v3.lanewise(VectorOperators.AND, 0xFFFF0000).reinterpretAsFloats().fma(xh1, b3);
        }
        if (n % (2 * L) != 0) { // one last L-column step, stored as in pack4's mapped-order tail: L bf16 per row
            int i = n - L;
            long b = base + 8L * i;
            long row = 2L * L;
            long hb = 2L * HL;
            FloatVector x0 = FloatVector.fromArray(H, x, xOff + i);
            FloatVector x1 = FloatVector.fromArray(H, x, xOff + i + HL);
            a0 = ((IntVector) ShortVector.fromMemorySegment(HS, seg, b, LE).convertShape(VectorOperators.S2I, HI, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(x0, a0);
            b0 = ((IntVector) ShortVector.fromMemorySegment(HS, seg, b + hb, LE).convertShape(VectorOperators.S2I, HI, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(x1, b0);
            a1 = ((IntVector) ShortVector.fromMemorySegment(HS, seg, b + row, LE).convertShape(VectorOperators.S2I, HI, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(x0, a1);
            b1 = ((IntVector) ShortVector.fromMemorySegment(HS, seg, b + row + hb, LE).convertShape(VectorOperators.S2I, HI, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(x1, b1);
            a2 = ((IntVector) ShortVector.fromMemorySegment(HS, seg, b + 2 * row, LE).convertShape(VectorOperators.S2I, HI, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(x0, a2);
            b2 = ((IntVector) ShortVector.fromMemorySegment(HS, seg, b + 2 * row + hb, LE).convertShape(VectorOperators.S2I, HI, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(x1, b2);
            a3 = ((IntVector) ShortVector.fromMemorySegment(HS, seg, b + 3 * row, LE).convertShape(VectorOperators.S2I, HI, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(x0, a3);
            b3 = ((IntVector) ShortVector.fromMemorySegment(HS, seg, b + 3 * row + hb, LE).convertShape(VectorOperators.S2I, HI, 0)).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().fma(x1, b3);
        }
        ((FloatVector) H.vectorType().cast(a0)).intoArray(lanes, 0);
        ((FloatVector) H.vectorType().cast(b0)).intoArray(lanes, HL);
        ((FloatVector) H.vectorType().cast(a1)).intoArray(lanes, L);
        ((FloatVector) H.vectorType().cast(b1)).intoArray(lanes, L + HL);
        ((FloatVector) H.vectorType().cast(a2)).intoArray(lanes, 2 * L);
        ((FloatVector) H.vectorType().cast(b2)).intoArray(lanes, 2 * L + HL);
        ((FloatVector) H.vectorType().cast(a3)).intoArray(lanes, 3 * L);
        ((FloatVector) H.vectorType().cast(b3)).intoArray(lanes, 3 * L + HL);
        out[outOff] = sumLanes(lanes, 0);
        out[outOff + 1] = sumLanes(lanes, L);
        out[outOff + 2] = sumLanes(lanes, 2 * L);
        out[outOff + 3] = sumLanes(lanes, 3 * L);
    }
}
