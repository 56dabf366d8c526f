package io.tqserve.kv.turbo;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * Vector API decode of key codes and rotated-domain values; bit-identical twin of {@link KeyCodec#decodeScalar} and
 * {@link ValueCodec#decodeRotatedScalar} (same float32 add and multiply per element, no FMA).
 *
 * <p>Unpacking L codes of b bits (L = float lanes, b in 2…5): a masked load of exactly the L·b/8 bytes that hold
 * them, two byte rearranges picking for lane i the bytes at ⌊b·i/8⌋ and ⌊b·i/8⌋+1, widened to ints, joined into a
 * 16-bit word, shifted right by (b·i) mod 8 and masked. The codebook lookup is a lane permutation of the centroid
 * table when it fits in one or two vectors (2…5 bits at 16 lanes), else a scalar table read.
 */
final class VectorDecode {
    private static final VectorSpecies<Float> F = VectorFwht.F;
    private static final int L = F.length();
    private static final VectorSpecies<Integer> I = VectorSpecies.of(int.class, F.vectorShape());
    private static final VectorSpecies<Byte> B = VectorSpecies.of(byte.class, VectorShape.forBitSize(L * 8));
    private static final int GROUP = TurboLayout.GROUP;

    @SuppressWarnings("unchecked")
    private static final VectorShuffle<Byte>[] LO = new VectorShuffle[6];
    @SuppressWarnings("unchecked")
    private static final VectorShuffle<Byte>[] HI = new VectorShuffle[6];
    @SuppressWarnings("unchecked")
    private static final VectorMask<Byte>[] LOAD = new VectorMask[6];
    private static final IntVector[] SHIFT = new IntVector[6];
    /** Centroid tables as int vectors of float bits, [bits][0 or 1]; null when they do not fit in two vectors. */
    private static final IntVector[][] TABLE = new IntVector[9][];

    static {
        for (int b = 2; b <= 5; b++) {
            int bits = b;
            LO[b] = VectorShuffle.fromOp(B, i -> i < L ? (bits * i) >> 3 : 0);
            HI[b] = VectorShuffle.fromOp(B, i -> i < L ? Math.min(L - 1, ((bits * i) >> 3) + 1) : 0);
            LOAD[b] = B.indexInRange(0, L * b / 8);
            int[] sh = new int[L];
            for (int i = 0; i < L; i++) {
                sh[i] = (b * i) & 7;
            }
            SHIFT[b] = IntVector.fromArray(I, sh, 0);
        }
        for (int b : TurboConstants.V_BITS) {
            float[] c = TurboConstants.centroidsShared(b);
            if (c.length <= 2 * L) {
                int[] t = new int[2 * L];
                for (int i = 0; i < c.length; i++) {
                    t[i] = Float.floatToRawIntBits(c[i]);
                }
                TABLE[b] = new IntVector[] {IntVector.fromArray(I, t, 0), IntVector.fromArray(I, t, L)};
            }
        }
    }

    private VectorDecode() {
    }

    /** L codes of {@code bits} (2…5) bits starting at byte {@code off}, unsigned. */
    private static IntVector unpack(MemorySegment src, long off, int bits) {
        ByteVector bv = ByteVector.fromMemorySegment(B, src, off, ByteOrder.LITTLE_ENDIAN, LOAD[bits]);
        IntVector word = (IntVector) bv.rearrange(LO[bits]).convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
        if (bits == 3 || bits == 5) {
            IntVector hi = (IntVector) bv.rearrange(HI[bits]).convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
            word = word.or(hi.lanewise(VectorOperators.LSHL, 8));
        }
        return word.lanewise(VectorOperators.LSHR, SHIFT[bits]).and((1 << bits) - 1);
    }

    static void decodeKey(TurboLayout lay, MemorySegment src, long base, float[] out, int outOff) {
        if (L > GROUP || GROUP % L != 0) {
            KeyCodec.decodeScalar(lay, src, base, out, outOff);
            return;
        }
        KeyQuant q = lay.keyQuant();
        int bits = q.bits();
        long codes = base + lay.keyCodesOffset();
        long scales = base + lay.keyScalesOffset();
        long zeros = base + lay.keyZerosOffset();
        for (int g = 0, n = lay.groups(); g < n; g++) {
            float scale = CodePacking.readFp16(src, scales + 2L * g);
            float zero = CodePacking.readFp16(src, zeros + 2L * g);
            for (int j = 0; j < GROUP; j += L) {
                int e = g * GROUP + j;
                long at = codes + (long) e * bits / 8;
                FloatVector f;
                if (bits == 8) {
                    ByteVector bv = ByteVector.fromMemorySegment(B, src, at, ByteOrder.LITTLE_ENDIAN);
                    f = q.signed()
                            ? (FloatVector) bv.convertShape(VectorOperators.B2F, F, 0)
                            : (FloatVector) bv.convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0)
                                    .convert(VectorOperators.I2F, 0);
                } else {
                    f = (FloatVector) unpack(src, at, bits).convert(VectorOperators.I2F, 0);
                }
                f.add(zero).mul(scale).intoArray(out, outOff + e);
            }
        }
    }

    static void decodeValueRotated(TurboLayout lay, float[] centroids, MemorySegment src, long base, float[] out,
            int outOff) {
        int bits = lay.vBits();
        IntVector[] table = TABLE[bits];
        if (L > GROUP || GROUP % L != 0 || table == null || bits == 8) {
            decodeValueRotatedTable(lay, centroids, src, base, out, outOff);
            return;
        }
        boolean two = (1 << bits) > L;
        long codes = base + lay.valueCodesOffset();
        long scales = base + lay.valueScalesOffset();
        for (int g = 0, n = lay.groups(); g < n; g++) {
            float scale = CodePacking.readFp16(src, scales + 2L * g);
            for (int j = 0; j < GROUP; j += L) {
                int e = g * GROUP + j;
                IntVector idx = unpack(src, codes + (long) e * bits / 8, bits);
                IntVector c = two ? idx.selectFrom(table[0], table[1]) : idx.selectFrom(table[0]);
                c.reinterpretAsFloats().mul(scale).intoArray(out, outOff + e);
            }
        }
    }

    /** 8-bit codes (and species that do not fit): one table read per element. */
    private static void decodeValueRotatedTable(TurboLayout lay, float[] c, MemorySegment src, long base, float[] out,
            int outOff) {
        if (lay.vBits() != 8) {
            ValueCodec.decodeRotatedScalar(lay, src, base, out, outOff);
            return;
        }
        long codes = base + lay.valueCodesOffset();
        long scales = base + lay.valueScalesOffset();
        for (int g = 0, n = lay.groups(); g < n; g++) {
            float scale = CodePacking.readFp16(src, scales + 2L * g);
            int o = g * GROUP;
            for (int i = 0; i < GROUP; i++) {
                out[outOff + o + i] = c[src.get(ValueLayout.JAVA_BYTE, codes + o + i) & 0xFF] * scale;
            }
        }
    }
}
