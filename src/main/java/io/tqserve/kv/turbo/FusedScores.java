package io.tqserve.kv.turbo;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * Attention scores straight from the key codes of {@link TurboBlockLayout} blocks (Vector API), without decoding a
 * key: with k_i = (c_i + z_g)·s_g, q·k = Σ_g s_g·(Σ_{i∈g} q_i·c_i + z_g·Σ_{i∈g} q_i). The 16 tokens of a block lie
 * along the lanes, so each lane computes one token's score and no horizontal sum is needed; the query heads that
 * share the KV head (GQA, and the rows of a multi-row task) are processed four at a time at 16 lanes
 * ({@link FusedHeads}), the rest in pairs, each code converted once for the heads it serves.
 *
 * <p>Per lane (token) and head the arithmetic is exactly that of {@link FusedScalar#scores}: four partial sums
 * p_k = fma chains over elements 32g+4m+k (m = 0…7) in order, a = (p0+p1)+(p2+p3), S = fma(s_g, fma(z_g, Q_g, a), S)
 * over groups in order, score = S·scale — so the two are bit-identical. As everywhere in the vector code of this
 * project, vectors are never passed through helper methods (C2 would box them).
 */
final class FusedScores {
    static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    static final int L = F.length();
    /** The lane counts the vector kernels handle (a block is 16 tokens: one or two vectors). */
    static final boolean SUPPORTED = L == 8 || L == 16;
    private static final VectorSpecies<Integer> I = VectorSpecies.of(int.class, F.vectorShape());
    private static final VectorSpecies<Byte> B = VectorSpecies.of(byte.class, VectorShape.forBitSize(Math.max(64, L * 8)));
    private static final VectorSpecies<Byte> B64 = ByteVector.SPECIES_512;
    private static final boolean L16 = L == 16;
    private static final VectorSpecies<Short> S =
            VectorSpecies.of(short.class, VectorShape.forBitSize(Math.max(64, L * 16)));
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final int T = TurboBlockLayout.TOKENS;
    private static final int BLOCKS = TurboQuantKvCache.CHUNK / T;

    private FusedScores() {
    }

    /**
     * sc[scOff + j·scStride + t] = scale · q_j·k_t for the first nT tokens of one (layer, KV head) and the heads
     * j < heads whose queries start at qb[j·d·L] (each element broadcast to L lanes, see {@link #broadcastQueries});
     * also writes the lanes of the last block past nT (garbage, to be ignored).
     *
     * @param headBase offset of the (layer, KV head) run of blocks inside every chunk
     * @param qsum     qsum[j·G + g] = Σ_{i∈g} q_j,i
     * @param kf       scratch of headDim·16 floats (codes of non-8-bit keys)
     */
    static void scores(TurboBlockLayout lay, MemorySegment[] chunks, long headBase, int nT, float[] qb, int heads,
            float[] qsum, float[] sc, int scOff, int scStride, float scale, float[] kf) {
        int d = lay.headDim();
        int groups = lay.groups();
        int blockBytes = lay.bytes();
        boolean k8 = lay.entry().kBits() == 8 && lay.entry().keyQuant().signed();
        long ks = lay.keyScalesOffset();
        long kz = lay.keyZerosOffset();
        int nBlocks = (nT + T - 1) / T;
        for (int b = 0; b < nBlocks; b++) {
            MemorySegment seg = chunks[b / BLOCKS];
            long blk = headBase + (long) (b % BLOCKS) * blockBytes;
            if (!k8) {
                for (int i = 0; i < d; i++) {
                    for (int j = 0; j < T; j++) {
                        kf[i * T + j] = lay.keyCode(seg, blk, i, j);
                    }
                }
            }
            int t0 = scOff + b * T;
            int j0 = 0;
            for (; FusedHeads.SUPPORTED && j0 + 4 <= heads; j0 += 4) { // the rows' heads four at a time
                FusedHeads.scoreBlock(seg, blk, k8, kf, qb, j0, d, groups, ks, kz, qsum, sc, t0, scStride, scale);
            }
            for (; FusedHeads.SUPPORTED && j0 + 2 <= heads; j0 += 2) {
                FusedHeads.scoreBlockPair(seg, blk, k8, kf, qb, j0, d, groups, ks, kz, qsum, sc, t0, scStride, scale);
            }
            for (int j = j0; j < heads; j += 2) {
                boolean pair = j + 1 < heads;
                int qa = j * d * L;
                int qc = pair ? qa + d * L : qa;
                for (int h = 0; h < T; h += L) {
                    FloatVector sa = FloatVector.zero(F);
                    FloatVector sb = FloatVector.zero(F);
                    for (int g = 0; g < groups; g++) {
                        FloatVector a0 = FloatVector.zero(F), a1 = FloatVector.zero(F);
                        FloatVector a2 = FloatVector.zero(F), a3 = FloatVector.zero(F);
                        FloatVector b0 = FloatVector.zero(F), b1 = FloatVector.zero(F);
                        FloatVector b2 = FloatVector.zero(F), b3 = FloatVector.zero(F);
                        for (int m = 0; m < 8; m++) {
                            int e = g * 32 + 4 * m; // partial k takes element e + k
                            FloatVector c0, c1, c2, c3;
                            if (k8 && L16) { // rows e..e+3 are 64 consecutive bytes: one load, four widenings
                                ByteVector rows = ByteVector.fromMemorySegment(B64, seg, blk + (long) e * T, LE);
                                c0 = (FloatVector) rows.convertShape(VectorOperators.B2F, F, 0);
                                c1 = (FloatVector) rows.convertShape(VectorOperators.B2F, F, 1);
                                c2 = (FloatVector) rows.convertShape(VectorOperators.B2F, F, 2);
                                c3 = (FloatVector) rows.convertShape(VectorOperators.B2F, F, 3);
                            } else if (k8) {
                                long r = blk + (long) e * T + h;
                                c0 = (FloatVector) ByteVector.fromMemorySegment(B, seg, r, LE).convertShape(VectorOperators.B2F, F, 0);
                                c1 = (FloatVector) ByteVector.fromMemorySegment(B, seg, r + T, LE).convertShape(VectorOperators.B2F, F, 0);
                                c2 = (FloatVector) ByteVector.fromMemorySegment(B, seg, r + 2 * T, LE).convertShape(VectorOperators.B2F, F, 0);
                                c3 = (FloatVector) ByteVector.fromMemorySegment(B, seg, r + 3 * T, LE).convertShape(VectorOperators.B2F, F, 0);
                            } else {
                                c0 = FloatVector.fromArray(F, kf, e * T + h);
                                c1 = FloatVector.fromArray(F, kf, (e + 1) * T + h);
                                c2 = FloatVector.fromArray(F, kf, (e + 2) * T + h);
                                c3 = FloatVector.fromArray(F, kf, (e + 3) * T + h);
                            }
                            a0 = c0.fma(FloatVector.fromArray(F, qb, qa + e * L), a0);
                            a1 = c1.fma(FloatVector.fromArray(F, qb, qa + (e + 1) * L), a1);
                            a2 = c2.fma(FloatVector.fromArray(F, qb, qa + (e + 2) * L), a2);
                            a3 = c3.fma(FloatVector.fromArray(F, qb, qa + (e + 3) * L), a3);
                            if (pair) {
                                b0 = c0.fma(FloatVector.fromArray(F, qb, qc + e * L), b0);
                                b1 = c1.fma(FloatVector.fromArray(F, qb, qc + (e + 1) * L), b1);
                                b2 = c2.fma(FloatVector.fromArray(F, qb, qc + (e + 2) * L), b2);
                                b3 = c3.fma(FloatVector.fromArray(F, qb, qc + (e + 3) * L), b3);
                            }
                        }
                        // fp16 → float32 of the lanes' scale and zero, exact (normal, subnormal, inf, NaN)
                        long so = blk + ks + 2L * (g * T + h);
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
                        if (pair) {
                            sb = s.fma(z.fma(FloatVector.broadcast(F, qsum[(j + 1) * groups + g]), b0.add(b1).add(b2.add(b3))), sb);
                        }
                    }
                    sa.mul(scale).intoArray(sc, t0 + j * scStride + h);
                    if (pair) {
                        sb.mul(scale).intoArray(sc, t0 + (j + 1) * scStride + h);
                    }
                }
            }
        }
    }

    /** qb[(j·d + i)·L + lane] = q[qOff + j·qStride + i]: each query element broadcast to a vector's lanes. */
    static void broadcastQueries(float[] q, int qOff, int qStride, int heads, int d, float[] qb) {
        for (int j = 0; j < heads; j++) {
            for (int i = 0; i < d; i++) {
                java.util.Arrays.fill(qb, (j * d + i) * L, (j * d + i + 1) * L, q[qOff + j * qStride + i]);
            }
        }
    }
}
