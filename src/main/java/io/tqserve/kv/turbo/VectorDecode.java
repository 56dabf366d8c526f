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
 * <p>Unpacking L codes of b bits (L = float lanes): with 16 lanes and b = 2, 3, 4 from one or two scalar words —
 * the word is broadcast (lanes 8–15 get the word that starts at code 8) and each lane shifts right by its bit
 * position and masks. Otherwise a masked load of exactly the L·b/8 bytes holding them, two byte rearranges picking
 * for lane i the bytes at ⌊b·i/8⌋ and ⌊b·i/8⌋+1, widened to ints, joined, shifted and masked. The codebook lookup
 * is a lane permutation of the centroid table held in one or two int vectors (2…5 bits at 16 lanes); 8-bit values
 * read the table per element. As in {@link VectorFwht}, the vector code is written inline, never passed through
 * helper methods, so C2 keeps every vector in registers.
 */
final class VectorDecode {
    private static final VectorSpecies<Float> F = VectorFwht.F;
    private static final int L = F.length();
    private static final VectorSpecies<Integer> I = VectorSpecies.of(int.class, F.vectorShape());
    private static final int GROUP = TurboLayout.GROUP;
    /** Species this class handles (8, 16 or 32 lanes: L bytes form a byte vector); others use the scalar twins. */
    private static final boolean SUPPORTED = L >= 8 && L <= GROUP && GROUP % L == 0;
    private static final VectorSpecies<Byte> B =
            VectorSpecies.of(byte.class, VectorShape.forBitSize(SUPPORTED ? L * 8 : 64));
    /** Bytes of a full-width vector: 4·L 8-bit codes. */
    private static final VectorSpecies<Byte> BF = VectorSpecies.of(byte.class, F.vectorShape());
    private static final boolean L16 = L == 16;

    @SuppressWarnings("unchecked")
    private static final VectorShuffle<Byte>[] LO = new VectorShuffle[6];
    @SuppressWarnings("unchecked")
    private static final VectorShuffle<Byte>[] HI = new VectorShuffle[6];
    @SuppressWarnings("unchecked")
    private static final VectorMask<Byte>[] LOAD = new VectorMask[6];
    private static final IntVector[] SHIFT = new IntVector[6];
    /** Per-lane shifts of the 16-lane word unpacking: b·(i mod 8), or 2i for 2-bit codes (one 32-bit word). */
    private static final IntVector[] SHIFT16 = new IntVector[6];
    private static final VectorMask<Integer> UPPER8;
    /** Centroid tables as int vectors of float bits, [bits][0 or 1]; null when they do not fit in two vectors. */
    private static final IntVector[][] TABLE = new IntVector[9][];

    static {
        for (int b = 2; b <= 5 && SUPPORTED; b++) {
            int bits = b;
            LO[b] = VectorShuffle.fromOp(B, i -> (bits * i) >> 3);
            HI[b] = VectorShuffle.fromOp(B, i -> Math.min(L - 1, ((bits * i) >> 3) + 1));
            LOAD[b] = B.indexInRange(0, L * b / 8);
            int[] sh = new int[L];
            for (int i = 0; i < L; i++) {
                sh[i] = (b * i) & 7;
            }
            SHIFT[b] = IntVector.fromArray(I, sh, 0);
            for (int i = 0; i < L; i++) {
                sh[i] = b == 2 ? b * i : b * (i % 8);
            }
            SHIFT16[b] = IntVector.fromArray(I, sh, 0);
        }
        boolean[] upper = new boolean[L];
        for (int i = 8; i < L; i++) {
            upper[i] = true;
        }
        UPPER8 = VectorMask.fromArray(I, upper, 0);
        for (int b : SUPPORTED ? TurboConstants.V_BITS : new int[0]) {
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

    /** out[outOff+i] = fl32(fl32(code_i + zero_g)·scale_g). */
    static void decodeKey(TurboLayout lay, MemorySegment src, long base, float[] out, int outOff) {
        if (!SUPPORTED) {
            KeyCodec.decodeScalar(lay, src, base, out, outOff);
            return;
        }
        KeyQuant q = lay.keyQuant();
        int bits = q.bits();
        boolean signed = q.signed();
        long codes = base + lay.keyCodesOffset();
        long scales = base + lay.keyScalesOffset();
        long zeros = base + lay.keyZerosOffset();
        int mask = (1 << bits) - 1;
        boolean words = L16 && bits <= 4;
        int n = lay.groups();
        if (bits == 8) { // one full-width byte vector holds 4·L codes; part p widens its p-th quarter
            int d = lay.headDim();
            for (int blk = 0; blk < d; blk += 4 * L) {
                ByteVector bv = ByteVector.fromMemorySegment(BF, src, codes + blk, ByteOrder.LITTLE_ENDIAN);
                for (int p = 0; p < 4; p++) {
                    int e = blk + p * L;
                    int g = e / GROUP;
                    float scale = Float.float16ToFloat(src.get(CodePacking.LE_SHORT, scales + 2L * g));
                    float zero = Float.float16ToFloat(src.get(CodePacking.LE_SHORT, zeros + 2L * g));
                    FloatVector f = signed
                            ? (FloatVector) bv.convertShape(VectorOperators.B2F, F, p)
                            : (FloatVector) bv.convertShape(VectorOperators.ZERO_EXTEND_B2I, I, p)
                                    .convert(VectorOperators.I2F, 0);
                    f.add(zero).mul(scale).intoArray(out, outOff + e);
                }
            }
            return;
        }
        for (int g = 0; g < n; g++) {
            float scale = Float.float16ToFloat(src.get(CodePacking.LE_SHORT, scales + 2L * g));
            float zero = Float.float16ToFloat(src.get(CodePacking.LE_SHORT, zeros + 2L * g));
            for (int j = 0; j < GROUP; j += L) {
                int e = g * GROUP + j;
                long at = codes + (long) e * bits / 8;
                IntVector w;
                if (words) {
                    if (bits == 2) {
                        w = IntVector.broadcast(I, src.get(CodePacking.LE_INT, at));
                    } else {
                        long word = src.get(CodePacking.LE_LONG, at); // 4 bits: 16 codes = 8 bytes exactly
                        w = IntVector.broadcast(I, (int) word).blend((int) (word >>> 32), UPPER8);
                    }
                    w = w.lanewise(VectorOperators.LSHR, SHIFT16[bits]);
                } else {
                    ByteVector bv = ByteVector.fromMemorySegment(B, src, at, ByteOrder.LITTLE_ENDIAN, LOAD[bits]);
                    w = (IntVector) bv.rearrange(LO[bits]).convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
                    IntVector hi = (IntVector) bv.rearrange(HI[bits]).convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
                    w = w.or(hi.lanewise(VectorOperators.LSHL, 8)).lanewise(VectorOperators.LSHR, SHIFT[bits]);
                }
                FloatVector f = (FloatVector) w.and(mask).convert(VectorOperators.I2F, 0);
                f.add(zero).mul(scale).intoArray(out, outOff + e);
            }
        }
    }

    /** out[outOff+i] = fl32(c[code_i]·scale_g). */
    static void decodeValueRotated(TurboLayout lay, float[] centroids, MemorySegment src, long base, float[] out,
            int outOff) {
        int bits = lay.vBits();
        IntVector[] table = TABLE[bits];
        if (!SUPPORTED || table == null || bits == 8) {
            decodeValueRotatedTable(lay, centroids, src, base, out, outOff);
            return;
        }
        IntVector t0 = table[0];
        IntVector t1 = table[1];
        boolean two = (1 << bits) > L;
        boolean words = L16 && bits <= 4;
        int mask = (1 << bits) - 1;
        long codes = base + lay.valueCodesOffset();
        long scales = base + lay.valueScalesOffset();
        for (int g = 0, n = lay.groups(); g < n; g++) {
            float scale = Float.float16ToFloat(src.get(CodePacking.LE_SHORT, scales + 2L * g));
            for (int j = 0; j < GROUP; j += L) {
                int e = g * GROUP + j;
                long at = codes + (long) e * bits / 8;
                IntVector w;
                if (words) {
                    if (bits == 2) {
                        w = IntVector.broadcast(I, src.get(CodePacking.LE_INT, at));
                    } else if (bits == 4) {
                        long word = src.get(CodePacking.LE_LONG, at);
                        w = IntVector.broadcast(I, (int) word).blend((int) (word >>> 32), UPPER8);
                    } else { // 3 bits: 16 codes = 6 bytes; lanes 8-15 start at bit 24
                        int lo = src.get(CodePacking.LE_INT, at);
                        int hi = (lo >>> 24) | (src.get(CodePacking.LE_SHORT, at + 4) & 0xFFFF) << 8;
                        w = IntVector.broadcast(I, lo).blend(hi, UPPER8);
                    }
                    w = w.lanewise(VectorOperators.LSHR, SHIFT16[bits]);
                } else {
                    ByteVector bv = ByteVector.fromMemorySegment(B, src, at, ByteOrder.LITTLE_ENDIAN, LOAD[bits]);
                    w = (IntVector) bv.rearrange(LO[bits]).convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
                    IntVector hi = (IntVector) bv.rearrange(HI[bits]).convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
                    w = w.or(hi.lanewise(VectorOperators.LSHL, 8)).lanewise(VectorOperators.LSHR, SHIFT[bits]);
                }
                IntVector idx = w.and(mask);
                IntVector c = two ? idx.selectFrom(t0, t1) : idx.selectFrom(t0);
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
            float scale = Float.float16ToFloat(src.get(CodePacking.LE_SHORT, scales + 2L * g));
            int o = g * GROUP;
            for (int i = 0; i < GROUP; i++) {
                out[outOff + o + i] = c[src.get(ValueLayout.JAVA_BYTE, codes + o + i) & 0xFF] * scale;
            }
        }
    }
}
