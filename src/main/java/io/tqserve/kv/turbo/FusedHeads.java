package io.tqserve.kv.turbo;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * The 16-lane fused kernels for four query heads at a time, used when a task serves at least four heads of one KV
 * head (the rows of a verification pass or a prompt's continuation, {@link TurboAttention#attendRows}, or a GQA
 * group of four): each key code and each value code is converted once for the four heads instead of once per pair,
 * which is what makes a pass's extra rows cheaper than the first. {@link FusedScores} and {@link FusedValues} serve
 * the heads left over (pairs, or one).
 *
 * <p>Per head the arithmetic is exactly that of the pair kernels (and so of their scalar twins in
 * {@link FusedScalar}): scores run the same four partial fma chains per group and the same group fma; values run
 * fma(c, fl(w·scale_g), acc) per element over the tokens in order. Only which heads share a converted code changes,
 * so every head's output is bit-identical to the pair kernels'. Four heads need 16 accumulators plus the codes:
 * AVX-512's 32 vector registers hold them; at 8 lanes (16 registers) the pair kernels run instead. Values cover 64
 * elements (two groups) per pass over the tokens for the same reason.
 */
final class FusedHeads {
    private static final VectorSpecies<Float> F = FusedScores.F;
    private static final VectorSpecies<Integer> I = VectorSpecies.of(int.class, F.vectorShape());
    private static final VectorSpecies<Short> S = ShortVector.SPECIES_256;
    private static final VectorSpecies<Byte> B64 = ByteVector.SPECIES_512;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final int T = TurboBlockLayout.TOKENS;
    private static final int CHUNK = TurboQuantKvCache.CHUNK;
    /** True where these kernels apply: 16 float lanes. */
    static final boolean SUPPORTED = FusedScores.L == 16;

    private FusedHeads() {
    }

    /**
     * Scores of heads j..j+3 over the 16 tokens of one block (at seg[blk]), as {@link FusedScores#scores} computes
     * them: sc[t0 + (j+x)·scStride + lane] for x < 4. {@code kf} holds the block's key codes as floats when the keys
     * are not signed 8-bit.
     */
    static void scoreBlock(MemorySegment seg, long blk, boolean k8, float[] kf, float[] qb, int j, int d, int groups,
            long ks, long kz, float[] qsum, float[] sc, int t0, int scStride, float scale) {
        int qa = j * d * 16;
        int qb1 = qa + d * 16;
        int qb2 = qb1 + d * 16;
        int qb3 = qb2 + d * 16;
        FloatVector sa = FloatVector.zero(F), sb = FloatVector.zero(F), sc2 = FloatVector.zero(F), sd = FloatVector.zero(F);
        for (int g = 0; g < groups; g++) {
            FloatVector a0 = FloatVector.zero(F), a1 = FloatVector.zero(F), a2 = FloatVector.zero(F), a3 = FloatVector.zero(F);
            FloatVector b0 = FloatVector.zero(F), b1 = FloatVector.zero(F), b2 = FloatVector.zero(F), b3 = FloatVector.zero(F);
            FloatVector c0 = FloatVector.zero(F), c1 = FloatVector.zero(F), c2 = FloatVector.zero(F), c3 = FloatVector.zero(F);
            FloatVector d0 = FloatVector.zero(F), d1 = FloatVector.zero(F), d2 = FloatVector.zero(F), d3 = FloatVector.zero(F);
            for (int m = 0; m < 8; m++) {
                int e = g * 32 + 4 * m; // partial k takes element e + k
                FloatVector k0, k1, k2, k3;
                if (k8) { // rows e..e+3 are 64 consecutive bytes: one load, four widenings
                    ByteVector rows = ByteVector.fromMemorySegment(B64, seg, blk + (long) e * T, LE);
                    k0 = (FloatVector) rows.convertShape(VectorOperators.B2F, F, 0);
                    k1 = (FloatVector) rows.convertShape(VectorOperators.B2F, F, 1);
                    k2 = (FloatVector) rows.convertShape(VectorOperators.B2F, F, 2);
                    k3 = (FloatVector) rows.convertShape(VectorOperators.B2F, F, 3);
                } else {
                    k0 = FloatVector.fromArray(F, kf, e * T);
                    k1 = FloatVector.fromArray(F, kf, (e + 1) * T);
                    k2 = FloatVector.fromArray(F, kf, (e + 2) * T);
                    k3 = FloatVector.fromArray(F, kf, (e + 3) * T);
                }
                int o = e * 16;
                a0 = k0.fma(FloatVector.fromArray(F, qb, qa + o), a0);
                a1 = k1.fma(FloatVector.fromArray(F, qb, qa + o + 16), a1);
                a2 = k2.fma(FloatVector.fromArray(F, qb, qa + o + 32), a2);
                a3 = k3.fma(FloatVector.fromArray(F, qb, qa + o + 48), a3);
                b0 = k0.fma(FloatVector.fromArray(F, qb, qb1 + o), b0);
                b1 = k1.fma(FloatVector.fromArray(F, qb, qb1 + o + 16), b1);
                b2 = k2.fma(FloatVector.fromArray(F, qb, qb1 + o + 32), b2);
                b3 = k3.fma(FloatVector.fromArray(F, qb, qb1 + o + 48), b3);
                c0 = k0.fma(FloatVector.fromArray(F, qb, qb2 + o), c0);
                c1 = k1.fma(FloatVector.fromArray(F, qb, qb2 + o + 16), c1);
                c2 = k2.fma(FloatVector.fromArray(F, qb, qb2 + o + 32), c2);
                c3 = k3.fma(FloatVector.fromArray(F, qb, qb2 + o + 48), c3);
                d0 = k0.fma(FloatVector.fromArray(F, qb, qb3 + o), d0);
                d1 = k1.fma(FloatVector.fromArray(F, qb, qb3 + o + 16), d1);
                d2 = k2.fma(FloatVector.fromArray(F, qb, qb3 + o + 32), d2);
                d3 = k3.fma(FloatVector.fromArray(F, qb, qb3 + o + 48), d3);
            }
            // fp16 → float32 of the lanes' scale and zero, exact (normal, subnormal, inf, NaN), as FusedScores
            long so = blk + ks + 2L * (g * T);
            IntVector hs = (IntVector) ShortVector.fromMemorySegment(S, seg, so, LE).convertShape(VectorOperators.S2I, I, 0);
            IntVector ms = hs.and(0x7FFF);
            FloatVector s = ms.lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f).reinterpretAsInts()
                    .blend(ms.lanewise(VectorOperators.LSHL, 13).or(0x70000000), ms.compare(VectorOperators.GE, 0x7C00))
                    .or(hs.and(0x8000).lanewise(VectorOperators.LSHL, 16)).reinterpretAsFloats();
            IntVector hz = (IntVector) ShortVector.fromMemorySegment(S, seg, so + (kz - ks), LE).convertShape(VectorOperators.S2I, I, 0);
            IntVector mz = hz.and(0x7FFF);
            FloatVector z = mz.lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f).reinterpretAsInts()
                    .blend(mz.lanewise(VectorOperators.LSHL, 13).or(0x70000000), mz.compare(VectorOperators.GE, 0x7C00))
                    .or(hz.and(0x8000).lanewise(VectorOperators.LSHL, 16)).reinterpretAsFloats();
            sa = s.fma(z.fma(FloatVector.broadcast(F, qsum[j * groups + g]), a0.add(a1).add(a2.add(a3))), sa);
            sb = s.fma(z.fma(FloatVector.broadcast(F, qsum[(j + 1) * groups + g]), b0.add(b1).add(b2.add(b3))), sb);
            sc2 = s.fma(z.fma(FloatVector.broadcast(F, qsum[(j + 2) * groups + g]), c0.add(c1).add(c2.add(c3))), sc2);
            sd = s.fma(z.fma(FloatVector.broadcast(F, qsum[(j + 3) * groups + g]), d0.add(d1).add(d2.add(d3))), sd);
        }
        int at = t0 + j * scStride;
        sa.mul(scale).intoArray(sc, at);
        sb.mul(scale).intoArray(sc, at + scStride);
        sc2.mul(scale).intoArray(sc, at + 2 * scStride);
        sd.mul(scale).intoArray(sc, at + 3 * scStride);
    }

    /**
     * Scores of heads j and j+1 over the 16 tokens of one block (at seg[blk]), as {@link FusedScores#scores} computes
     * them: sc[t0 + (j+x)·scStride + lane] for x < 2. {@code kf} holds the block's key codes as floats when the keys
     * are not signed 8-bit.
     */
    static void scoreBlockPair(MemorySegment seg, long blk, boolean k8, float[] kf, float[] qb, int j, int d, int groups,
            long ks, long kz, float[] qsum, float[] sc, int t0, int scStride, float scale) {
        int qa = j * d * 16;
        int qb1 = qa + d * 16;
        FloatVector sa = FloatVector.zero(F), sb = FloatVector.zero(F);
        for (int g = 0; g < groups; g++) {
            FloatVector a0 = FloatVector.zero(F), a1 = FloatVector.zero(F), a2 = FloatVector.zero(F), a3 = FloatVector.zero(F);
            FloatVector b0 = FloatVector.zero(F), b1 = FloatVector.zero(F), b2 = FloatVector.zero(F), b3 = FloatVector.zero(F);
            for (int m = 0; m < 8; m++) {
                int e = g * 32 + 4 * m; // partial k takes element e + k
                FloatVector k0, k1, k2, k3;
                if (k8) { // rows e..e+3 are 64 consecutive bytes: one load, four widenings
                    ByteVector rows = ByteVector.fromMemorySegment(B64, seg, blk + (long) e * T, LE);
                    k0 = (FloatVector) rows.convertShape(VectorOperators.B2F, F, 0);
                    k1 = (FloatVector) rows.convertShape(VectorOperators.B2F, F, 1);
                    k2 = (FloatVector) rows.convertShape(VectorOperators.B2F, F, 2);
                    k3 = (FloatVector) rows.convertShape(VectorOperators.B2F, F, 3);
                } else {
                    k0 = FloatVector.fromArray(F, kf, e * T);
                    k1 = FloatVector.fromArray(F, kf, (e + 1) * T);
                    k2 = FloatVector.fromArray(F, kf, (e + 2) * T);
                    k3 = FloatVector.fromArray(F, kf, (e + 3) * T);
                }
                int o = e * 16;
                a0 = k0.fma(FloatVector.fromArray(F, qb, qa + o), a0);
                a1 = k1.fma(FloatVector.fromArray(F, qb, qa + o + 16), a1);
                a2 = k2.fma(FloatVector.fromArray(F, qb, qa + o + 32), a2);
                a3 = k3.fma(FloatVector.fromArray(F, qb, qa + o + 48), a3);
                b0 = k0.fma(FloatVector.fromArray(F, qb, qb1 + o), b0);
                b1 = k1.fma(FloatVector.fromArray(F, qb, qb1 + o + 16), b1);
                b2 = k2.fma(FloatVector.fromArray(F, qb, qb1 + o + 32), b2);
                b3 = k3.fma(FloatVector.fromArray(F, qb, qb1 + o + 48), b3);
            }
            // fp16 → float32 of the lanes' scale and zero, exact (normal, subnormal, inf, NaN), as FusedScores
            long so = blk + ks + 2L * (g * T);
            IntVector hs = (IntVector) ShortVector.fromMemorySegment(S, seg, so, LE).convertShape(VectorOperators.S2I, I, 0);
            IntVector ms = hs.and(0x7FFF);
            FloatVector s = ms.lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f).reinterpretAsInts()
                    .blend(ms.lanewise(VectorOperators.LSHL, 13).or(0x70000000), ms.compare(VectorOperators.GE, 0x7C00))
                    .or(hs.and(0x8000).lanewise(VectorOperators.LSHL, 16)).reinterpretAsFloats();
            IntVector hz = (IntVector) ShortVector.fromMemorySegment(S, seg, so + (kz - ks), LE).convertShape(VectorOperators.S2I, I, 0);
            IntVector mz = hz.and(0x7FFF);
            FloatVector z = mz.lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f).reinterpretAsInts()
                    .blend(mz.lanewise(VectorOperators.LSHL, 13).or(0x70000000), mz.compare(VectorOperators.GE, 0x7C00))
                    .or(hz.and(0x8000).lanewise(VectorOperators.LSHL, 16)).reinterpretAsFloats();
            sa = s.fma(z.fma(FloatVector.broadcast(F, qsum[j * groups + g]), a0.add(a1).add(a2.add(a3))), sa);
            sb = s.fma(z.fma(FloatVector.broadcast(F, qsum[(j + 1) * groups + g]), b0.add(b1).add(b2.add(b3))), sb);
        }
        int at = t0 + j * scStride;
        sa.mul(scale).intoArray(sc, at);
        sb.mul(scale).intoArray(sc, at + scStride);
    }

    /**
     * Values of heads j..j+3 (weights at w[wOff + (j+x)·wStride + t]) over the first nT tokens, 64 elements at a
     * time, as {@link FusedValues} computes them (2/3/4-bit values, headDim a multiple of 128): out[outOff +
     * (j+x)·outStride + i], rotated domain. The word shuffles and tables are the wide path's.
     */
    static void values(TurboBlockLayout lay, MemorySegment[] chunks, long headBase, int nT, float[] w, int wOff,
            int wStride, int j, float[] out, int outOff, int outStride) {
        int d = lay.headDim();
        int bits = lay.entry().vBits();
        IntVector t0 = FusedValues.TABLE[bits][0];
        IntVector shift = FusedValues.SHIFT[bits];
        VectorShuffle<Byte>[] words = FusedValues.WORDS[bits];
        VectorMask<Byte> codeMask = FusedValues.CODES[bits];
        int vCodeBytes = lay.entry().valueCodeBytes();
        int blockBytes = lay.bytes();
        int mask = (1 << bits) - 1;
        int wa = wOff + j * wStride;
        for (int s0 = 0; s0 < d; s0 += 64) {
            int g = s0 / 32;
            int v = s0 % 128 / 16; // first of the 128-element slab's 8 word vectors this half uses
            long slab = (long) (s0 - s0 % 128) * bits / 8;
            VectorShuffle<Byte> u0 = words[v], u1 = words[v + 1], u2 = words[v + 2], u3 = words[v + 3];
            FloatVector a0 = FloatVector.zero(F), a1 = FloatVector.zero(F), a2 = FloatVector.zero(F), a3 = FloatVector.zero(F);
            FloatVector b0 = FloatVector.zero(F), b1 = FloatVector.zero(F), b2 = FloatVector.zero(F), b3 = FloatVector.zero(F);
            FloatVector c0 = FloatVector.zero(F), c1 = FloatVector.zero(F), c2 = FloatVector.zero(F), c3 = FloatVector.zero(F);
            FloatVector d0 = FloatVector.zero(F), d1 = FloatVector.zero(F), d2 = FloatVector.zero(F), d3 = FloatVector.zero(F);
            for (int cs = 0; cs < nT; cs += CHUNK) {
                MemorySegment seg = chunks[cs / CHUNK];
                int end = Math.min(nT, cs + CHUNK);
                for (int t = cs; t < end; t++) {
                    int tc = t - cs;
                    long e = headBase + (long) (tc / T) * blockBytes + lay.valueEntryOffset(tc % T);
                    ByteVector raw = ByteVector.fromMemorySegment(B64, seg, e + slab, LE, codeMask);
                    FloatVector k0 = raw.rearrange(u0).reinterpretAsInts().lanewise(VectorOperators.LSHR, shift).and(mask).selectFrom(t0).reinterpretAsFloats();
                    FloatVector k1 = raw.rearrange(u1).reinterpretAsInts().lanewise(VectorOperators.LSHR, shift).and(mask).selectFrom(t0).reinterpretAsFloats();
                    FloatVector k2 = raw.rearrange(u2).reinterpretAsInts().lanewise(VectorOperators.LSHR, shift).and(mask).selectFrom(t0).reinterpretAsFloats();
                    FloatVector k3 = raw.rearrange(u3).reinterpretAsInts().lanewise(VectorOperators.LSHR, shift).and(mask).selectFrom(t0).reinterpretAsFloats();
                    long sc = e + vCodeBytes + 2L * g;
                    float v0 = Float.float16ToFloat(seg.get(CodePacking.LE_SHORT, sc));
                    float v1 = Float.float16ToFloat(seg.get(CodePacking.LE_SHORT, sc + 2));
                    float wt = w[wa + t];
                    a0 = k0.fma(FloatVector.broadcast(F, wt * v0), a0);
                    a1 = k1.fma(FloatVector.broadcast(F, wt * v0), a1);
                    a2 = k2.fma(FloatVector.broadcast(F, wt * v1), a2);
                    a3 = k3.fma(FloatVector.broadcast(F, wt * v1), a3);
                    wt = w[wa + wStride + t];
                    b0 = k0.fma(FloatVector.broadcast(F, wt * v0), b0);
                    b1 = k1.fma(FloatVector.broadcast(F, wt * v0), b1);
                    b2 = k2.fma(FloatVector.broadcast(F, wt * v1), b2);
                    b3 = k3.fma(FloatVector.broadcast(F, wt * v1), b3);
                    wt = w[wa + 2 * wStride + t];
                    c0 = k0.fma(FloatVector.broadcast(F, wt * v0), c0);
                    c1 = k1.fma(FloatVector.broadcast(F, wt * v0), c1);
                    c2 = k2.fma(FloatVector.broadcast(F, wt * v1), c2);
                    c3 = k3.fma(FloatVector.broadcast(F, wt * v1), c3);
                    wt = w[wa + 3 * wStride + t];
                    d0 = k0.fma(FloatVector.broadcast(F, wt * v0), d0);
                    d1 = k1.fma(FloatVector.broadcast(F, wt * v0), d1);
                    d2 = k2.fma(FloatVector.broadcast(F, wt * v1), d2);
                    d3 = k3.fma(FloatVector.broadcast(F, wt * v1), d3);
                }
            }
            int o = outOff + j * outStride + s0;
            a0.intoArray(out, o);
            a1.intoArray(out, o + 16);
            a2.intoArray(out, o + 32);
            a3.intoArray(out, o + 48);
            o += outStride;
            b0.intoArray(out, o);
            b1.intoArray(out, o + 16);
            b2.intoArray(out, o + 32);
            b3.intoArray(out, o + 48);
            o += outStride;
            c0.intoArray(out, o);
            c1.intoArray(out, o + 16);
            c2.intoArray(out, o + 32);
            c3.intoArray(out, o + 48);
            o += outStride;
            d0.intoArray(out, o);
            d1.intoArray(out, o + 16);
            d2.intoArray(out, o + 32);
            d3.intoArray(out, o + 48);
        }
    }
    /**
     * Values of heads j and j+1 (weights at w[wOff + (j+x)·wStride + t]) over the first nT tokens, 64 elements at a
     * time, as {@link FusedValues} computes them (2/3/4-bit values, headDim a multiple of 128): out[outOff +
     * (j+x)·outStride + i], rotated domain. The word shuffles and tables are the wide path's.
     */
    static void valuesPair(TurboBlockLayout lay, MemorySegment[] chunks, long headBase, int nT, float[] w, int wOff,
            int wStride, int j, float[] out, int outOff, int outStride) {
        int d = lay.headDim();
        int bits = lay.entry().vBits();
        IntVector t0 = FusedValues.TABLE[bits][0];
        IntVector shift = FusedValues.SHIFT[bits];
        VectorShuffle<Byte>[] words = FusedValues.WORDS[bits];
        VectorMask<Byte> codeMask = FusedValues.CODES[bits];
        int vCodeBytes = lay.entry().valueCodeBytes();
        int blockBytes = lay.bytes();
        int mask = (1 << bits) - 1;
        int wa = wOff + j * wStride;
        for (int s0 = 0; s0 < d; s0 += 64) {
            int g = s0 / 32;
            int v = s0 % 128 / 16; // first of the 128-element slab's 8 word vectors this half uses
            long slab = (long) (s0 - s0 % 128) * bits / 8;
            VectorShuffle<Byte> u0 = words[v], u1 = words[v + 1], u2 = words[v + 2], u3 = words[v + 3];
            FloatVector a0 = FloatVector.zero(F), a1 = FloatVector.zero(F), a2 = FloatVector.zero(F), a3 = FloatVector.zero(F);
            FloatVector b0 = FloatVector.zero(F), b1 = FloatVector.zero(F), b2 = FloatVector.zero(F), b3 = FloatVector.zero(F);
            for (int cs = 0; cs < nT; cs += CHUNK) {
                MemorySegment seg = chunks[cs / CHUNK];
                int end = Math.min(nT, cs + CHUNK);
                for (int t = cs; t < end; t++) {
                    int tc = t - cs;
                    long e = headBase + (long) (tc / T) * blockBytes + lay.valueEntryOffset(tc % T);
                    ByteVector raw = ByteVector.fromMemorySegment(B64, seg, e + slab, LE, codeMask);
                    FloatVector k0 = raw.rearrange(u0).reinterpretAsInts().lanewise(VectorOperators.LSHR, shift).and(mask).selectFrom(t0).reinterpretAsFloats();
                    FloatVector k1 = raw.rearrange(u1).reinterpretAsInts().lanewise(VectorOperators.LSHR, shift).and(mask).selectFrom(t0).reinterpretAsFloats();
                    FloatVector k2 = raw.rearrange(u2).reinterpretAsInts().lanewise(VectorOperators.LSHR, shift).and(mask).selectFrom(t0).reinterpretAsFloats();
                    FloatVector k3 = raw.rearrange(u3).reinterpretAsInts().lanewise(VectorOperators.LSHR, shift).and(mask).selectFrom(t0).reinterpretAsFloats();
                    long sc = e + vCodeBytes + 2L * g;
                    float v0 = Float.float16ToFloat(seg.get(CodePacking.LE_SHORT, sc));
                    float v1 = Float.float16ToFloat(seg.get(CodePacking.LE_SHORT, sc + 2));
                    float wt = w[wa + t];
                    a0 = k0.fma(FloatVector.broadcast(F, wt * v0), a0);
                    a1 = k1.fma(FloatVector.broadcast(F, wt * v0), a1);
                    a2 = k2.fma(FloatVector.broadcast(F, wt * v1), a2);
                    a3 = k3.fma(FloatVector.broadcast(F, wt * v1), a3);
                    wt = w[wa + wStride + t];
                    b0 = k0.fma(FloatVector.broadcast(F, wt * v0), b0);
                    b1 = k1.fma(FloatVector.broadcast(F, wt * v0), b1);
                    b2 = k2.fma(FloatVector.broadcast(F, wt * v1), b2);
                    b3 = k3.fma(FloatVector.broadcast(F, wt * v1), b3);
                }
            }
            int o = outOff + j * outStride + s0;
            a0.intoArray(out, o);
            a1.intoArray(out, o + 16);
            a2.intoArray(out, o + 32);
            a3.intoArray(out, o + 48);
            o += outStride;
            b0.intoArray(out, o);
            b1.intoArray(out, o + 16);
            b2.intoArray(out, o + 32);
            b3.intoArray(out, o + 48);
        }
    }
}
