package io.tqserve.backend.cpu;

import static io.tqserve.backend.cpu.QuantizedInt8.BLOCK;
import static io.tqserve.backend.cpu.QuantizedInt8.F;
import static io.tqserve.backend.cpu.QuantizedInt8.S;
import static io.tqserve.backend.cpu.VectorKernels.LE;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;

/**
 * The 4-bit loops of {@link QuantizedInt8} for activations quantized to {@code |xq| <= }{@link #RANGE} per block of 64
 * columns ({@code d = max|x| / 1092}; {@link QuantActivations#AUTO}, the default) instead of 127: about 8.6 times
 * finer steps, so the embedded model's logits stay within 0.14 of the dense twin's (int8: 1.39) and its greedy tokens
 * on the reference prompts are those of the float kernels. A code (at most 15) times such an activation fills 16 bits
 * ({@code vpmullw}: 15 · 1092 = 16380), so two products are summed in 16 bits (at most 32760) where int8 sums four,
 * and the two pair sums of each 32-bit lane are widened apart ({@code (i << 16 >> 16) + (i >> 16)}) before the
 * conversion to float. Per 64 weights of a row: 6 code extractions, 4 multiplies, 2 16-bit adds, 9 operations of
 * widening, one conversion and one multiply-add by {@code scale · d}.
 *
 * <p>The same layout, activation order, prologue, bias terms and scalar twin ({@link QuantizedInt8#dot}, whose
 * integer sums are exact for any range) as the int8 4-bit loops; measured on one AMD EPYC Zen 3 core (a 2048×2048
 * matrix from cache through {@link CpuBackend#matmul}, thread CPU time, arms interleaved in one JVM, two runs on a
 * loaded machine, G weights/s): float kernels 10.0–11.9, these 12.3–14.1, int8 14.5–16.4. Centred codes ({@code q - 8}, which would allow 12-bit
 * activations or four products per 16-bit sum) need shifts in pairs to sign-extend each nibble and ran at 11.2.
 */
final class QuantizedWide4 {
    /** The largest |xq|: two products of a 4-bit code and xq stay below 2^15 (2 · 15 · 1092 = 32760). */
    static final int RANGE = 1092;

    private QuantizedWide4() {
    }

    /** Two rows at b0 and b0 + d1 of the stored layout: per 64-column block one load of 16 shorts per row. */
    static void loop2(MemorySegment seg, long b0, long d1, int n, short[] xq, int qOff, float[] xd, int dOff,
            float[] sb, int base, int groups, int q0, int count, float[] out, int outOff) {
        int blocks = n / BLOCK;
        long b1 = b0 + d1;
        int s0 = base + q0 * blocks;
        int s1 = s0 + blocks;
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        // the block index is the loop's counter, so every read is linear in it and its range check leaves the loop
        for (int t = 0; t < blocks; t++) {
            int k = qOff + t * BLOCK;
            long off = t * 32L;
            ShortVector v0 = ShortVector.fromMemorySegment(S, seg, b0 + off, LE);
            ShortVector v1 = ShortVector.fromMemorySegment(S, seg, b1 + off, LE);
            ShortVector x = ShortVector.fromArray(S, xq, k);
            ShortVector y = ShortVector.fromArray(S, xq, k + 16);
            ShortVector a0 = v0.and((short) 0xF).mul(x).add(v0.lanewise(VectorOperators.LSHR, 4).and((short) 0xF).mul(y));
            ShortVector a1 = v1.and((short) 0xF).mul(x).add(v1.lanewise(VectorOperators.LSHR, 4).and((short) 0xF).mul(y));
            x = ShortVector.fromArray(S, xq, k + 32);
            y = ShortVector.fromArray(S, xq, k + 48);
            ShortVector p0 = v0.lanewise(VectorOperators.LSHR, 8).and((short) 0xF).mul(x)
                    .add(v0.lanewise(VectorOperators.LSHR, 12).mul(y));
            ShortVector p1 = v1.lanewise(VectorOperators.LSHR, 8).and((short) 0xF).mul(x)
                    .add(v1.lanewise(VectorOperators.LSHR, 12).mul(y));
            // per 32-bit lane the two pair sums of each vector, each 16-bit half sign-extended apart, written out
            // rather than in a helper: a helper taking the vectors ran at a third of the speed (not inlined, boxed)
            IntVector i0 = p0.reinterpretAsInts();
            IntVector i1 = p1.reinterpretAsInts();
            IntVector j0 = a0.reinterpretAsInts();
            IntVector j1 = a1.reinterpretAsInts();
            i0 = i0.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16)
                    .add(i0.lanewise(VectorOperators.ASHR, 16))
                    .add(j0.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16))
                    .add(j0.lanewise(VectorOperators.ASHR, 16));
            i1 = i1.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16)
                    .add(i1.lanewise(VectorOperators.ASHR, 16))
                    .add(j1.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16))
                    .add(j1.lanewise(VectorOperators.ASHR, 16));
            c0 = ((FloatVector) i0.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(F, sb[s0 + t] * xd[dOff + t]), c0);
            c1 = ((FloatVector) i1.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(F, sb[s1 + t] * xd[dOff + t]), c1);
        }
        float[] lanes = VectorKernels.LANES.get();
        // typed as F's vector class first, written out here rather than in a helper: QuantizedLoops' class comment
        ((FloatVector) F.vectorType().cast(c0)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c1)).intoArray(lanes, 8);
        QuantizedLoops.finish2(lanes, sb, groups, q0, count, out, outOff);
    }

    /**
     * {@link #loop2} on a pair of rows repacked at load ({@link QuantizedPack}): row 1's chunk follows row 0's. A copy
     * for the reason given at {@link QuantizedLoops#loop2Q4Packed} (a stride parameter keeps the range check in the
     * loop); the same arithmetic, so the same bits as the stored layout.
     */
    static void loop2Packed(MemorySegment seg, long b0, int n, short[] xq, int qOff, float[] xd, int dOff, float[] sb,
            int base, int groups, int q0, float[] out, int outOff) {
        int blocks = n / BLOCK;
        long b1 = b0 + 32;
        int s0 = base + q0 * blocks;
        int s1 = s0 + blocks;
        FloatVector c0 = FloatVector.zero(F);
        FloatVector c1 = FloatVector.zero(F);
        for (int t = 0; t < blocks; t++) {
            int k = qOff + t * BLOCK;
            long off = t * 64L;
            ShortVector v0 = ShortVector.fromMemorySegment(S, seg, b0 + off, LE);
            ShortVector v1 = ShortVector.fromMemorySegment(S, seg, b1 + off, LE);
            ShortVector x = ShortVector.fromArray(S, xq, k);
            ShortVector y = ShortVector.fromArray(S, xq, k + 16);
            ShortVector a0 = v0.and((short) 0xF).mul(x).add(v0.lanewise(VectorOperators.LSHR, 4).and((short) 0xF).mul(y));
            ShortVector a1 = v1.and((short) 0xF).mul(x).add(v1.lanewise(VectorOperators.LSHR, 4).and((short) 0xF).mul(y));
            x = ShortVector.fromArray(S, xq, k + 32);
            y = ShortVector.fromArray(S, xq, k + 48);
            ShortVector p0 = v0.lanewise(VectorOperators.LSHR, 8).and((short) 0xF).mul(x)
                    .add(v0.lanewise(VectorOperators.LSHR, 12).mul(y));
            ShortVector p1 = v1.lanewise(VectorOperators.LSHR, 8).and((short) 0xF).mul(x)
                    .add(v1.lanewise(VectorOperators.LSHR, 12).mul(y));
            // per 32-bit lane the two pair sums of each vector, each 16-bit half sign-extended apart, written out
            // rather than in a helper: a helper taking the vectors ran at a third of the speed (not inlined, boxed)
            IntVector i0 = p0.reinterpretAsInts();
            IntVector i1 = p1.reinterpretAsInts();
            IntVector j0 = a0.reinterpretAsInts();
            IntVector j1 = a1.reinterpretAsInts();
            i0 = i0.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16)
                    .add(i0.lanewise(VectorOperators.ASHR, 16))
                    .add(j0.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16))
                    .add(j0.lanewise(VectorOperators.ASHR, 16));
            i1 = i1.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16)
                    .add(i1.lanewise(VectorOperators.ASHR, 16))
                    .add(j1.lanewise(VectorOperators.LSHL, 16).lanewise(VectorOperators.ASHR, 16))
                    .add(j1.lanewise(VectorOperators.ASHR, 16));
            c0 = ((FloatVector) i0.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(F, sb[s0 + t] * xd[dOff + t]), c0);
            c1 = ((FloatVector) i1.convert(VectorOperators.I2F, 0))
                    .fma(FloatVector.broadcast(F, sb[s1 + t] * xd[dOff + t]), c1);
        }
        float[] lanes = VectorKernels.LANES.get();
        // typed as F's vector class first, written out here rather than in a helper: QuantizedLoops' class comment
        ((FloatVector) F.vectorType().cast(c0)).intoArray(lanes, 0);
        ((FloatVector) F.vectorType().cast(c1)).intoArray(lanes, 8);
        QuantizedLoops.finish2(lanes, sb, groups, q0, 4, out, outOff);
    }
}
