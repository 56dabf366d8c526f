package io.tqserve.kv.turbo;

import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The weighted sum of values straight from the value codes (Vector API), in the rotated domain: acc_i = Σ_t
 * c[code_t,i]·ws_t,g(i) with ws_t,g = w_t·scale_t,g, never decoding a value row to memory; the caller un-rotates
 * the sum once per query row. The query heads of a KV head are processed in pairs, each code unpacked and looked
 * up once for both. Each lane (element) runs fma(c, ws, acc) over the tokens in order, exactly as
 * {@link FusedScalar#values}, so the two are bit-identical.
 *
 * <p>Fast path (2/3/4-bit values, 8 or 16 lanes): the codes of a vector come from one or two little-endian words
 * broadcast to the lanes, shifted per lane and masked; the codebook lookup is a lane permutation of the centroid
 * table. Other widths unpack the codes with scalar code into a scratch row first.
 */
final class FusedValues {
    private static final VectorSpecies<Float> F = FusedScores.F;
    private static final int L = FusedScores.L;
    private static final boolean L16 = L == 16;
    private static final VectorSpecies<Integer> I = VectorSpecies.of(int.class, F.vectorShape());
    private static final int T = TurboBlockLayout.TOKENS;
    private static final int CHUNK = TurboQuantKvCache.CHUNK;
    /** Per-lane right shifts of the word unpacking, by value bits. */
    private static final IntVector[] SHIFT = new IntVector[5];
    private static final VectorMask<Integer> UPPER8;
    /** Centroid tables (float bits) in one or two int vectors, by value bits (2, 3, 4). */
    private static final IntVector[][] TABLE = new IntVector[5][];

    static {
        boolean[] upper = new boolean[L];
        for (int i = 8; i < L; i++) {
            upper[i] = true;
        }
        UPPER8 = VectorMask.fromArray(I, upper, 0);
        for (int b = 2; b <= 4 && FusedScores.SUPPORTED; b++) {
            int[] sh = new int[L];
            for (int i = 0; i < L; i++) {
                sh[i] = L16 && b != 2 ? b * (i % 8) : b * i;
            }
            SHIFT[b] = IntVector.fromArray(I, sh, 0);
            float[] c = TurboConstants.centroidsShared(b);
            int[] t = new int[2 * L];
            for (int i = 0; i < c.length; i++) {
                t[i] = Float.floatToRawIntBits(c[i]);
            }
            TABLE[b] = new IntVector[] {IntVector.fromArray(I, t, 0), IntVector.fromArray(I, t, L)};
        }
    }

    private FusedValues() {
    }

    /**
     * out[outOff + j·outStride + i] = Σ_t c[code_t,i]·ws[wsOff + j·wsStride + t·G + g(i)] over the first nT tokens,
     * for heads j < heads (rotated domain, not un-rotated).
     *
     * @param row   scratch of headDim floats; @param codes scratch of headDim ints (widths off the fast path)
     */
    static void values(TurboBlockLayout lay, MemorySegment[] chunks, long headBase, int nT, float[] ws, int wsOff,
            int wsStride, int heads, float[] out, int outOff, int outStride, float[] row, int[] codes) {
        int d = lay.headDim();
        int groups = lay.groups();
        int bits = lay.entry().vBits();
        int blockBytes = lay.bytes();
        boolean fast = bits <= 4;
        IntVector t0 = fast ? TABLE[bits][0] : null;
        IntVector t1 = fast ? TABLE[bits][1] : null;
        IntVector shift = fast ? SHIFT[bits] : null;
        boolean two = (1 << bits) > L;
        int mask = (1 << bits) - 1;
        float[] c = TurboConstants.centroidsShared(bits);
        int slab = 4 * L;
        int j = 0;
        for (; j < heads; j += 2) {
            boolean pair = j + 1 < heads;
            int wa = wsOff + j * wsStride;
            int wb = pair ? wa + wsStride : wa;
            for (int s0 = 0; s0 < d; s0 += slab) {
                int g0 = s0 / 32;
                int g1 = (s0 + L) / 32;
                int g2 = (s0 + 2 * L) / 32;
                int g3 = (s0 + 3 * L) / 32;
                FloatVector a0 = FloatVector.zero(F), a1 = FloatVector.zero(F);
                FloatVector a2 = FloatVector.zero(F), a3 = FloatVector.zero(F);
                FloatVector b0 = FloatVector.zero(F), b1 = FloatVector.zero(F);
                FloatVector b2 = FloatVector.zero(F), b3 = FloatVector.zero(F);
                for (int cs = 0; cs < nT; cs += CHUNK) {
                    MemorySegment seg = chunks[cs / CHUNK];
                    int end = Math.min(nT, cs + CHUNK);
                    for (int t = cs; t < end; t++) {
                        int tc = t - cs;
                        long e = headBase + (long) (tc / T) * blockBytes + lay.valueEntryOffset(tc % T);
                        FloatVector c0, c1, c2, c3;
                        if (fast && L16) {
                            long at = e + (long) s0 * bits / 8;
                            IntVector w0, w1, w2, w3;
                            if (bits == 2) {
                                w0 = IntVector.broadcast(I, seg.get(CodePacking.LE_INT, at));
                                w1 = IntVector.broadcast(I, seg.get(CodePacking.LE_INT, at + 4));
                                w2 = IntVector.broadcast(I, seg.get(CodePacking.LE_INT, at + 8));
                                w3 = IntVector.broadcast(I, seg.get(CodePacking.LE_INT, at + 12));
                            } else if (bits == 3) { // 16 codes = 6 bytes; lanes 8-15 start at byte 3
                                w0 = IntVector.broadcast(I, seg.get(CodePacking.LE_INT, at)).blend(seg.get(CodePacking.LE_INT, at + 3), UPPER8);
                                w1 = IntVector.broadcast(I, seg.get(CodePacking.LE_INT, at + 6)).blend(seg.get(CodePacking.LE_INT, at + 9), UPPER8);
                                w2 = IntVector.broadcast(I, seg.get(CodePacking.LE_INT, at + 12)).blend(seg.get(CodePacking.LE_INT, at + 15), UPPER8);
                                w3 = IntVector.broadcast(I, seg.get(CodePacking.LE_INT, at + 18)).blend(seg.get(CodePacking.LE_INT, at + 21), UPPER8);
                            } else { // 4 bits: 16 codes = one long
                                w0 = IntVector.broadcast(I, seg.get(CodePacking.LE_INT, at)).blend(seg.get(CodePacking.LE_INT, at + 4), UPPER8);
                                w1 = IntVector.broadcast(I, seg.get(CodePacking.LE_INT, at + 8)).blend(seg.get(CodePacking.LE_INT, at + 12), UPPER8);
                                w2 = IntVector.broadcast(I, seg.get(CodePacking.LE_INT, at + 16)).blend(seg.get(CodePacking.LE_INT, at + 20), UPPER8);
                                w3 = IntVector.broadcast(I, seg.get(CodePacking.LE_INT, at + 24)).blend(seg.get(CodePacking.LE_INT, at + 28), UPPER8);
                            }
                            IntVector i0 = w0.lanewise(VectorOperators.LSHR, shift).and(mask);
                            IntVector i1 = w1.lanewise(VectorOperators.LSHR, shift).and(mask);
                            IntVector i2 = w2.lanewise(VectorOperators.LSHR, shift).and(mask);
                            IntVector i3 = w3.lanewise(VectorOperators.LSHR, shift).and(mask);
                            c0 = i0.selectFrom(t0).reinterpretAsFloats();
                            c1 = i1.selectFrom(t0).reinterpretAsFloats();
                            c2 = i2.selectFrom(t0).reinterpretAsFloats();
                            c3 = i3.selectFrom(t0).reinterpretAsFloats();
                        } else if (fast) { // 8 lanes: 8 codes of ≤ 4 bits lie in one int
                            long at = e + (long) s0 * bits / 8;
                            IntVector i0 = IntVector.broadcast(I, seg.get(CodePacking.LE_INT, at)).lanewise(VectorOperators.LSHR, shift).and(mask);
                            IntVector i1 = IntVector.broadcast(I, seg.get(CodePacking.LE_INT, at + bits)).lanewise(VectorOperators.LSHR, shift).and(mask);
                            IntVector i2 = IntVector.broadcast(I, seg.get(CodePacking.LE_INT, at + 2 * bits)).lanewise(VectorOperators.LSHR, shift).and(mask);
                            IntVector i3 = IntVector.broadcast(I, seg.get(CodePacking.LE_INT, at + 3 * bits)).lanewise(VectorOperators.LSHR, shift).and(mask);
                            c0 = (two ? i0.selectFrom(t0, t1) : i0.selectFrom(t0)).reinterpretAsFloats();
                            c1 = (two ? i1.selectFrom(t0, t1) : i1.selectFrom(t0)).reinterpretAsFloats();
                            c2 = (two ? i2.selectFrom(t0, t1) : i2.selectFrom(t0)).reinterpretAsFloats();
                            c3 = (two ? i3.selectFrom(t0, t1) : i3.selectFrom(t0)).reinterpretAsFloats();
                        } else {
                            CodePacking.unpack(seg, e + (long) s0 * bits / 8, bits, false, codes, 0, slab);
                            for (int i = 0; i < slab; i++) {
                                row[i] = c[codes[i]];
                            }
                            c0 = FloatVector.fromArray(F, row, 0);
                            c1 = FloatVector.fromArray(F, row, L);
                            c2 = FloatVector.fromArray(F, row, 2 * L);
                            c3 = FloatVector.fromArray(F, row, 3 * L);
                        }
                        int tw = t * groups;
                        a0 = c0.fma(FloatVector.broadcast(F, ws[wa + tw + g0]), a0);
                        a1 = c1.fma(FloatVector.broadcast(F, ws[wa + tw + g1]), a1);
                        a2 = c2.fma(FloatVector.broadcast(F, ws[wa + tw + g2]), a2);
                        a3 = c3.fma(FloatVector.broadcast(F, ws[wa + tw + g3]), a3);
                        if (pair) {
                            b0 = c0.fma(FloatVector.broadcast(F, ws[wb + tw + g0]), b0);
                            b1 = c1.fma(FloatVector.broadcast(F, ws[wb + tw + g1]), b1);
                            b2 = c2.fma(FloatVector.broadcast(F, ws[wb + tw + g2]), b2);
                            b3 = c3.fma(FloatVector.broadcast(F, ws[wb + tw + g3]), b3);
                        }
                    }
                }
                int oa = outOff + j * outStride + s0;
                a0.intoArray(out, oa);
                a1.intoArray(out, oa + L);
                a2.intoArray(out, oa + 2 * L);
                a3.intoArray(out, oa + 3 * L);
                if (pair) {
                    int ob = oa + outStride;
                    b0.intoArray(out, ob);
                    b1.intoArray(out, ob + L);
                    b2.intoArray(out, ob + 2 * L);
                    b3.intoArray(out, ob + 3 * L);
                }
            }
        }
    }
}
