package io.tqserve.kv.turbo;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * Vector API twin of {@link Fwht}'s scalar butterflies, bit-identical to them: every output is the same single
 * float32 add or subtract of the same two operands.
 *
 * <p>Stages with h below the lane count run inside one vector: t = the vector with lanes swapped by XOR h, then
 * fma(v, g, t) with g = +1 in lanes whose bit h is clear and −1 where it is set. v·(±1) is exact, so the fused
 * multiply-add rounds exactly once, to fl32(a+b) in the lower lane and fl32(a−b) in the upper one — the scalar
 * butterfly. With 16 lanes a block of 128 elements (8 vectors) runs its first 7 stages in registers; wider stages
 * pair whole vectors in memory, and the last stage applies ×1/√d and ×σ on the way out (σ = 1 when absent: exact).
 *
 * <p>The vector code is deliberately written out straight-line: a helper method that takes or returns a vector is
 * not always inlined by C2 (e.g. once it has its own large compiled body), and then every vector is boxed on the
 * heap, several times slower (docs/benchmarks-journal.md).
 */
final class VectorFwht {
    static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    private static final int L = F.length();
    private static final int IN_STAGES = Integer.numberOfTrailingZeros(L);
    @SuppressWarnings("unchecked")
    private static final VectorShuffle<Float>[] SWAP = new VectorShuffle[Math.max(IN_STAGES, 4)];
    private static final FloatVector[] SIGN = new FloatVector[Math.max(IN_STAGES, 4)];
    private static final boolean WIDE = L == 16;
    private static final float[] ONES = new float[512];
    private static final VectorShuffle<Float> SW1;
    private static final VectorShuffle<Float> SW2;
    private static final VectorShuffle<Float> SW4;
    private static final VectorShuffle<Float> SW8;
    private static final FloatVector SG1;
    private static final FloatVector SG2;
    private static final FloatVector SG4;
    private static final FloatVector SG8;

    static {
        java.util.Arrays.fill(ONES, 1f);
        for (int s = 0; s < IN_STAGES; s++) {
            int h = 1 << s;
            SWAP[s] = VectorShuffle.fromOp(F, i -> i ^ h);
            float[] g = new float[L];
            for (int i = 0; i < L; i++) {
                g[i] = (i & h) != 0 ? -1f : 1f;
            }
            SIGN[s] = FloatVector.fromArray(F, g, 0);
        }
        SW1 = SWAP[0];
        SW2 = SWAP[1];
        SW4 = SWAP[2];
        SW8 = SWAP[3];
        SG1 = SIGN[0];
        SG2 = SIGN[1];
        SG4 = SIGN[2];
        SG8 = SIGN[3];
    }

    private VectorFwht() {
    }

    /** x ← H·(x ⊙ σ). */
    static void rotate(float[] x, int off, int d, float[] sigma) {
        Fwht.checkLength(x, off, d);
        if (d < L) {
            Fwht.rotateScalar(x, off, d, sigma);
            return;
        }
        for (int i = 0; i < d; i += L) {
            FloatVector.fromArray(F, x, off + i).mul(FloatVector.fromArray(F, sigma, i)).intoArray(x, off + i);
        }
        transform(x, off, d, null, TurboConstants.invSqrtN(d));
    }

    /** Butterflies, then ×s, then ×σ when sigma is not null. */
    static void transform(float[] x, int off, int d, float[] sigma, float s) {
        Fwht.checkLength(x, off, d);
        if (d < L || d > ONES.length) {
            Fwht.transformScalar(x, off, d, sigma, s);
            return;
        }
        float[] sg = sigma == null ? ONES : sigma;
        if (WIDE && d == 64) {
            block64(x, off, sg, s);
        } else if (WIDE && d == 128) {
            block128(x, off, sg, s);
        } else if (WIDE && d > 128) {
            for (int b = 0; b < d; b += 128) {
                block128(x, off + b, null, 1f);
            }
            crossStages(x, off, d, 128, sg, s);
        } else {
            for (int i = 0; i < d; i += L) {
                FloatVector v = FloatVector.fromArray(F, x, off + i);
                for (int st = 0; st < IN_STAGES; st++) {
                    v = v.fma(SIGN[st], v.rearrange(SWAP[st]));
                }
                v.intoArray(x, off + i);
            }
            crossStages(x, off, d, L, sg, s);
        }
    }

    /** d = 64 with 16 lanes: all six stages in registers, then ×s ×σ. */
    private static void block64(float[] x, int o, float[] sg, float s) {
        FloatVector v0 = FloatVector.fromArray(F, x, o + 0);
        FloatVector v1 = FloatVector.fromArray(F, x, o + 16);
        FloatVector v2 = FloatVector.fromArray(F, x, o + 32);
        FloatVector v3 = FloatVector.fromArray(F, x, o + 48);
        v0 = v0.fma(SG1, v0.rearrange(SW1));
        v1 = v1.fma(SG1, v1.rearrange(SW1));
        v2 = v2.fma(SG1, v2.rearrange(SW1));
        v3 = v3.fma(SG1, v3.rearrange(SW1));
        v0 = v0.fma(SG2, v0.rearrange(SW2));
        v1 = v1.fma(SG2, v1.rearrange(SW2));
        v2 = v2.fma(SG2, v2.rearrange(SW2));
        v3 = v3.fma(SG2, v3.rearrange(SW2));
        v0 = v0.fma(SG4, v0.rearrange(SW4));
        v1 = v1.fma(SG4, v1.rearrange(SW4));
        v2 = v2.fma(SG4, v2.rearrange(SW4));
        v3 = v3.fma(SG4, v3.rearrange(SW4));
        v0 = v0.fma(SG8, v0.rearrange(SW8));
        v1 = v1.fma(SG8, v1.rearrange(SW8));
        v2 = v2.fma(SG8, v2.rearrange(SW8));
        v3 = v3.fma(SG8, v3.rearrange(SW8));
        FloatVector a0 = v0.add(v1);
        FloatVector a1 = v0.sub(v1);
        FloatVector a2 = v2.add(v3);
        FloatVector a3 = v2.sub(v3);
        a0.add(a2).mul(s).mul(FloatVector.fromArray(F, sg, 0)).intoArray(x, o);
        a1.add(a3).mul(s).mul(FloatVector.fromArray(F, sg, 16)).intoArray(x, o + 16);
        a0.sub(a2).mul(s).mul(FloatVector.fromArray(F, sg, 32)).intoArray(x, o + 32);
        a1.sub(a3).mul(s).mul(FloatVector.fromArray(F, sg, 48)).intoArray(x, o + 48);
    }

    /**
     * Stages h = 1 … 64 of the 128 elements at x[o] in registers; with sg (the last stage of d = 128) also ×s ×σ,
     * without (sg null) the block is stored unscaled for the wider stages.
     */
    private static void block128(float[] x, int o, float[] sg, float s) {
        FloatVector v0 = FloatVector.fromArray(F, x, o + 0);
        FloatVector v1 = FloatVector.fromArray(F, x, o + 16);
        FloatVector v2 = FloatVector.fromArray(F, x, o + 32);
        FloatVector v3 = FloatVector.fromArray(F, x, o + 48);
        FloatVector v4 = FloatVector.fromArray(F, x, o + 64);
        FloatVector v5 = FloatVector.fromArray(F, x, o + 80);
        FloatVector v6 = FloatVector.fromArray(F, x, o + 96);
        FloatVector v7 = FloatVector.fromArray(F, x, o + 112);
        v0 = v0.fma(SG1, v0.rearrange(SW1));
        v1 = v1.fma(SG1, v1.rearrange(SW1));
        v2 = v2.fma(SG1, v2.rearrange(SW1));
        v3 = v3.fma(SG1, v3.rearrange(SW1));
        v4 = v4.fma(SG1, v4.rearrange(SW1));
        v5 = v5.fma(SG1, v5.rearrange(SW1));
        v6 = v6.fma(SG1, v6.rearrange(SW1));
        v7 = v7.fma(SG1, v7.rearrange(SW1));
        v0 = v0.fma(SG2, v0.rearrange(SW2));
        v1 = v1.fma(SG2, v1.rearrange(SW2));
        v2 = v2.fma(SG2, v2.rearrange(SW2));
        v3 = v3.fma(SG2, v3.rearrange(SW2));
        v4 = v4.fma(SG2, v4.rearrange(SW2));
        v5 = v5.fma(SG2, v5.rearrange(SW2));
        v6 = v6.fma(SG2, v6.rearrange(SW2));
        v7 = v7.fma(SG2, v7.rearrange(SW2));
        v0 = v0.fma(SG4, v0.rearrange(SW4));
        v1 = v1.fma(SG4, v1.rearrange(SW4));
        v2 = v2.fma(SG4, v2.rearrange(SW4));
        v3 = v3.fma(SG4, v3.rearrange(SW4));
        v4 = v4.fma(SG4, v4.rearrange(SW4));
        v5 = v5.fma(SG4, v5.rearrange(SW4));
        v6 = v6.fma(SG4, v6.rearrange(SW4));
        v7 = v7.fma(SG4, v7.rearrange(SW4));
        v0 = v0.fma(SG8, v0.rearrange(SW8));
        v1 = v1.fma(SG8, v1.rearrange(SW8));
        v2 = v2.fma(SG8, v2.rearrange(SW8));
        v3 = v3.fma(SG8, v3.rearrange(SW8));
        v4 = v4.fma(SG8, v4.rearrange(SW8));
        v5 = v5.fma(SG8, v5.rearrange(SW8));
        v6 = v6.fma(SG8, v6.rearrange(SW8));
        v7 = v7.fma(SG8, v7.rearrange(SW8));
        FloatVector a0 = v0.add(v1);
        FloatVector a1 = v0.sub(v1);
        FloatVector a2 = v2.add(v3);
        FloatVector a3 = v2.sub(v3);
        FloatVector a4 = v4.add(v5);
        FloatVector a5 = v4.sub(v5);
        FloatVector a6 = v6.add(v7);
        FloatVector a7 = v6.sub(v7);
        FloatVector b0 = a0.add(a2);
        FloatVector b1 = a1.add(a3);
        FloatVector b2 = a0.sub(a2);
        FloatVector b3 = a1.sub(a3);
        FloatVector b4 = a4.add(a6);
        FloatVector b5 = a5.add(a7);
        FloatVector b6 = a4.sub(a6);
        FloatVector b7 = a5.sub(a7);
        if (sg != null) {
            b0.add(b4).mul(s).mul(FloatVector.fromArray(F, sg, 0)).intoArray(x, o);
            b1.add(b5).mul(s).mul(FloatVector.fromArray(F, sg, 16)).intoArray(x, o + 16);
            b2.add(b6).mul(s).mul(FloatVector.fromArray(F, sg, 32)).intoArray(x, o + 32);
            b3.add(b7).mul(s).mul(FloatVector.fromArray(F, sg, 48)).intoArray(x, o + 48);
            b0.sub(b4).mul(s).mul(FloatVector.fromArray(F, sg, 64)).intoArray(x, o + 64);
            b1.sub(b5).mul(s).mul(FloatVector.fromArray(F, sg, 80)).intoArray(x, o + 80);
            b2.sub(b6).mul(s).mul(FloatVector.fromArray(F, sg, 96)).intoArray(x, o + 96);
            b3.sub(b7).mul(s).mul(FloatVector.fromArray(F, sg, 112)).intoArray(x, o + 112);
        } else {
            b0.add(b4).intoArray(x, o);
            b1.add(b5).intoArray(x, o + 16);
            b2.add(b6).intoArray(x, o + 32);
            b3.add(b7).intoArray(x, o + 48);
            b0.sub(b4).intoArray(x, o + 64);
            b1.sub(b5).intoArray(x, o + 80);
            b2.sub(b6).intoArray(x, o + 96);
            b3.sub(b7).intoArray(x, o + 112);
        }
    }

    /** Stages h = h0 … d/2 between whole vectors; the last one also applies ×s ×σ. */
    private static void crossStages(float[] x, int off, int d, int h0, float[] sg, float s) {
        for (int h = h0; h < d >> 1; h <<= 1) {
            for (int j = 0; j < d; j += h << 1) {
                for (int k = j; k < j + h; k += L) {
                    FloatVector a = FloatVector.fromArray(F, x, off + k);
                    FloatVector b = FloatVector.fromArray(F, x, off + k + h);
                    a.add(b).intoArray(x, off + k);
                    a.sub(b).intoArray(x, off + k + h);
                }
            }
        }
        int h = d >> 1;
        if (h < h0) { // d == h0: no butterflies left, only the scale
            for (int i = 0; i < d; i += L) {
                FloatVector.fromArray(F, x, off + i).mul(s).mul(FloatVector.fromArray(F, sg, i)).intoArray(x, off + i);
            }
            return;
        }
        for (int k = 0; k < h; k += L) {
            FloatVector a = FloatVector.fromArray(F, x, off + k);
            FloatVector b = FloatVector.fromArray(F, x, off + k + h);
            a.add(b).mul(s).mul(FloatVector.fromArray(F, sg, k)).intoArray(x, off + k);
            a.sub(b).mul(s).mul(FloatVector.fromArray(F, sg, k + h)).intoArray(x, off + k + h);
        }
    }
}
