package io.tqserve.kv.turbo;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * The weighted sum of values straight from the value codes (Vector API), in the rotated domain: acc_i = Σ_t
 * c[code_t,i]·fl(w_t·scale_t,g(i)), never decoding a value row to memory; the caller un-rotates
 * the sum once per query row. The query heads of a KV head are processed in pairs, each code unpacked and looked
 * up once for both (on the 16-lane wide path, four at a time where a task serves four or more: {@link FusedHeads}).
 * Each lane (element) runs fma(c, w·scale, acc) over the tokens in order, exactly as
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
    static final IntVector[] SHIFT = new IntVector[5];
    private static final VectorMask<Integer> UPPER8;
    /** Centroid tables (float bits) in one or two int vectors, by value bits (2, 3, 4). */
    static final IntVector[][] TABLE = new IntVector[5][];
    /** 64 bytes, the codes of 128 elements (16·bits bytes) of one token in the 16-lane wide path. */
    private static final VectorSpecies<Byte> B64 = ByteVector.SPECIES_512;
    /** [bits][v]: byte shuffle giving int lane i of vector v the 4 code bytes its 16 codes start at. */
    @SuppressWarnings("unchecked")
    static final VectorShuffle<Byte>[][] WORDS = new VectorShuffle[5][8];
    @SuppressWarnings("unchecked")
    static final VectorMask<Byte>[] CODES = new VectorMask[5];

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
            if (L16) {
                int bits = b;
                CODES[b] = B64.indexInRange(0, 16 * b);
                for (int v = 0; v < 8; v++) {
                    int base = 2 * bits * v;
                    // lanes 0-7 read the word at the vector's first byte; lanes 8-15 the word at byte `bits` (2-bit
                    // codes: all 16 lanes read one word)
                    WORDS[b][v] = VectorShuffle.fromOp(B64, i -> Math.min(63,
                            base + (bits != 2 && i / 4 >= 8 ? bits : 0) + i % 4));
                }
            }
        }
    }

    private FusedValues() {
    }

    /**
     * out[outOff + j·outStride + i] = Σ_t c[code_t,i]·fl(w[wOff + j·wStride + t]·scale_t,g(i)) over the first nT
     * tokens, for heads j < heads (rotated domain, not un-rotated); w holds the softmax weights.
     *
     * @param row   scratch of headDim floats; @param codes scratch of headDim ints (widths off the fast path)
     */
    static void values(TurboBlockLayout lay, MemorySegment[] chunks, long headBase, int nT, float[] w, int wOff,
            int wStride, int heads, float[] out, int outOff, int outStride, float[] row, int[] codes) {
        int d = lay.headDim();
        int bits = lay.entry().vBits();
        int vCodeBytes = lay.entry().valueCodeBytes();
        int blockBytes = lay.bytes();
        boolean fast = bits <= 4;
        IntVector t0 = fast ? TABLE[bits][0] : null;
        IntVector t1 = fast ? TABLE[bits][1] : null;
        IntVector shift = fast ? SHIFT[bits] : null;
        boolean two = (1 << bits) > L;
        int mask = (1 << bits) - 1;
        if (L16 && fast && d % 128 == 0) {
            wide(lay, chunks, headBase, nT, w, wOff, wStride, heads, out, outOff, outStride);
            return;
        }
        float[] c = TurboConstants.centroidsShared(bits);
        int slab = 4 * L;
        int j = 0;
        for (; j < heads; j += 2) {
            boolean pair = j + 1 < heads;
            int wa = wOff + j * wStride;
            int wb = pair ? wa + wStride : wa;
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
                        long sc = e + vCodeBytes;
                        float v0 = Float.float16ToFloat(seg.get(CodePacking.LE_SHORT, sc + 2L * g0));
                        float v1 = Float.float16ToFloat(seg.get(CodePacking.LE_SHORT, sc + 2L * g1));
                        float v2 = Float.float16ToFloat(seg.get(CodePacking.LE_SHORT, sc + 2L * g2));
                        float v3 = Float.float16ToFloat(seg.get(CodePacking.LE_SHORT, sc + 2L * g3));
                        float wta = w[wa + t];
                        a0 = c0.fma(FloatVector.broadcast(F, wta * v0), a0);
                        a1 = c1.fma(FloatVector.broadcast(F, wta * v1), a1);
                        a2 = c2.fma(FloatVector.broadcast(F, wta * v2), a2);
                        a3 = c3.fma(FloatVector.broadcast(F, wta * v3), a3);
                        if (pair) {
                            float wtb = w[wb + t];
                            b0 = c0.fma(FloatVector.broadcast(F, wtb * v0), b0);
                            b1 = c1.fma(FloatVector.broadcast(F, wtb * v1), b1);
                            b2 = c2.fma(FloatVector.broadcast(F, wtb * v2), b2);
                            b3 = c3.fma(FloatVector.broadcast(F, wtb * v3), b3);
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

    /**
     * The 16-lane fast path over slabs of 128 elements (8 vectors, 4 groups) per pass over the tokens: per token
     * the per-group weights are computed once per head and every code word is read once.
     */
    private static void wide(TurboBlockLayout lay, MemorySegment[] chunks, long headBase, int nT, float[] w, int wOff,
            int wStride, int heads, float[] out, int outOff, int outStride) {
        int d = lay.headDim();
        int bits = lay.entry().vBits();
        int vCodeBytes = lay.entry().valueCodeBytes();
        int blockBytes = lay.bytes();
        IntVector t0 = TABLE[bits][0];
        IntVector shift = SHIFT[bits];
        int mask = (1 << bits) - 1;
        VectorMask<Byte> codeMask = CODES[bits];
        int j0 = 0;
        for (; j0 + 4 <= heads; j0 += 4) { // the rows' heads four at a time, 64 elements per pass
            FusedHeads.values(lay, chunks, headBase, nT, w, wOff, wStride, j0, out, outOff, outStride);
        }
        for (; j0 + 2 <= heads; j0 += 2) {
            FusedHeads.valuesPair(lay, chunks, headBase, nT, w, wOff, wStride, j0, out, outOff, outStride);
        }
        for (int j = j0; j < heads; j += 2) {
            boolean pair = j + 1 < heads;
            int wa = wOff + j * wStride;
            int wb = pair ? wa + wStride : wa;
            for (int s0 = 0; s0 < d; s0 += 128) {
                int g = s0 / 32;
                FloatVector a0 = FloatVector.zero(F), a1 = FloatVector.zero(F), a2 = FloatVector.zero(F), a3 = FloatVector.zero(F);
                FloatVector a4 = FloatVector.zero(F), a5 = FloatVector.zero(F), a6 = FloatVector.zero(F), a7 = FloatVector.zero(F);
                FloatVector b0 = FloatVector.zero(F), b1 = FloatVector.zero(F), b2 = FloatVector.zero(F), b3 = FloatVector.zero(F);
                FloatVector b4 = FloatVector.zero(F), b5 = FloatVector.zero(F), b6 = FloatVector.zero(F), b7 = FloatVector.zero(F);
                for (int cs = 0; cs < nT; cs += CHUNK) {
                    MemorySegment seg = chunks[cs / CHUNK];
                    int end = Math.min(nT, cs + CHUNK);
                    for (int t = cs; t < end; t++) {
                        int tc = t - cs;
                        long e = headBase + (long) (tc / T) * blockBytes + lay.valueEntryOffset(tc % T);
                        ByteVector raw = ByteVector.fromMemorySegment(B64, seg, e + (long) s0 * bits / 8,
                                ByteOrder.LITTLE_ENDIAN, codeMask);
                        IntVector w0 = raw.rearrange(WORDS[bits][0]).reinterpretAsInts();
                        IntVector w1 = raw.rearrange(WORDS[bits][1]).reinterpretAsInts();
                        IntVector w2 = raw.rearrange(WORDS[bits][2]).reinterpretAsInts();
                        IntVector w3 = raw.rearrange(WORDS[bits][3]).reinterpretAsInts();
                        IntVector w4 = raw.rearrange(WORDS[bits][4]).reinterpretAsInts();
                        IntVector w5 = raw.rearrange(WORDS[bits][5]).reinterpretAsInts();
                        IntVector w6 = raw.rearrange(WORDS[bits][6]).reinterpretAsInts();
                        IntVector w7 = raw.rearrange(WORDS[bits][7]).reinterpretAsInts();
                        FloatVector c0 = w0.lanewise(VectorOperators.LSHR, shift).and(mask).selectFrom(t0).reinterpretAsFloats();
                        FloatVector c1 = w1.lanewise(VectorOperators.LSHR, shift).and(mask).selectFrom(t0).reinterpretAsFloats();
                        FloatVector c2 = w2.lanewise(VectorOperators.LSHR, shift).and(mask).selectFrom(t0).reinterpretAsFloats();
                        FloatVector c3 = w3.lanewise(VectorOperators.LSHR, shift).and(mask).selectFrom(t0).reinterpretAsFloats();
                        FloatVector c4 = w4.lanewise(VectorOperators.LSHR, shift).and(mask).selectFrom(t0).reinterpretAsFloats();
                        FloatVector c5 = w5.lanewise(VectorOperators.LSHR, shift).and(mask).selectFrom(t0).reinterpretAsFloats();
                        FloatVector c6 = w6.lanewise(VectorOperators.LSHR, shift).and(mask).selectFrom(t0).reinterpretAsFloats();
                        FloatVector c7 = w7.lanewise(VectorOperators.LSHR, shift).and(mask).selectFrom(t0).reinterpretAsFloats();
                        long sc = e + vCodeBytes + 2L * g;
                        float v0 = Float.float16ToFloat(seg.get(CodePacking.LE_SHORT, sc));
                        float v1 = Float.float16ToFloat(seg.get(CodePacking.LE_SHORT, sc + 2));
                        float v2 = Float.float16ToFloat(seg.get(CodePacking.LE_SHORT, sc + 4));
                        float v3 = Float.float16ToFloat(seg.get(CodePacking.LE_SHORT, sc + 6));
                        float wta = w[wa + t];
                        FloatVector x0 = FloatVector.broadcast(F, wta * v0);
                        FloatVector x1 = FloatVector.broadcast(F, wta * v1);
                        FloatVector x2 = FloatVector.broadcast(F, wta * v2);
                        FloatVector x3 = FloatVector.broadcast(F, wta * v3);
                        a0 = c0.fma(x0, a0);
                        a1 = c1.fma(x0, a1);
                        a2 = c2.fma(x1, a2);
                        a3 = c3.fma(x1, a3);
                        a4 = c4.fma(x2, a4);
                        a5 = c5.fma(x2, a5);
                        a6 = c6.fma(x3, a6);
                        a7 = c7.fma(x3, a7);
                        if (pair) {
                            float wtb = w[wb + t];
                            FloatVector y0 = FloatVector.broadcast(F, wtb * v0);
                            FloatVector y1 = FloatVector.broadcast(F, wtb * v1);
                            FloatVector y2 = FloatVector.broadcast(F, wtb * v2);
                            FloatVector y3 = FloatVector.broadcast(F, wtb * v3);
                            b0 = c0.fma(y0, b0);
                            b1 = c1.fma(y0, b1);
                            b2 = c2.fma(y1, b2);
                            b3 = c3.fma(y1, b3);
                            b4 = c4.fma(y2, b4);
                            b5 = c5.fma(y2, b5);
                            b6 = c6.fma(y3, b6);
                            b7 = c7.fma(y3, b7);
                        }
                    }
                }
                int oa = outOff + j * outStride + s0;
                a0.intoArray(out, oa);
                a1.intoArray(out, oa + 16);
                a2.intoArray(out, oa + 32);
                a3.intoArray(out, oa + 48);
                a4.intoArray(out, oa + 64);
                a5.intoArray(out, oa + 80);
                a6.intoArray(out, oa + 96);
                a7.intoArray(out, oa + 112);
                if (pair) {
                    int ob = oa + outStride;
                    b0.intoArray(out, ob);
                    b1.intoArray(out, ob + 16);
                    b2.intoArray(out, ob + 32);
                    b3.intoArray(out, ob + 48);
                    b4.intoArray(out, ob + 64);
                    b5.intoArray(out, ob + 80);
                    b6.intoArray(out, ob + 96);
                    b7.intoArray(out, ob + 112);
                }
            }
        }
    }
}
