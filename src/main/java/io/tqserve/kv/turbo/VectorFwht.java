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
 * pair whole vectors in memory, and the last stage applies ×1/√d (and ×σ) on the way out.
 */
final class VectorFwht {
    static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    private static final int L = F.length();
    private static final int IN_STAGES = Integer.numberOfTrailingZeros(L);
    @SuppressWarnings("unchecked")
    private static final VectorShuffle<Float>[] SWAP = new VectorShuffle[Math.max(IN_STAGES, 4)];
    private static final FloatVector[] SIGN = new FloatVector[Math.max(IN_STAGES, 4)];
    private static final boolean WIDE = L == 16;
    private static final VectorShuffle<Float> SW1;
    private static final VectorShuffle<Float> SW2;
    private static final VectorShuffle<Float> SW4;
    private static final VectorShuffle<Float> SW8;
    private static final FloatVector SG1;
    private static final FloatVector SG2;
    private static final FloatVector SG4;
    private static final FloatVector SG8;

    static {
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
        if (d < L) {
            Fwht.transformScalar(x, off, d, sigma, s);
            return;
        }
        if (WIDE && d == 64) {
            block64(x, off, sigma, s);
            return;
        }
        if (WIDE && d == 128) {
            block128(x, off, true, sigma, 0, s);
            return;
        }
        int h0;
        if (WIDE && d > 128) {
            for (int b = 0; b < d; b += 128) {
                block128(x, off + b, false, null, 0, 1f);
            }
            h0 = 128;
        } else {
            for (int i = 0; i < d; i += L) {
                inVector(FloatVector.fromArray(F, x, off + i)).intoArray(x, off + i);
            }
            h0 = L;
        }
        crossStages(x, off, d, h0, sigma, s);
    }

    private static FloatVector inVector(FloatVector v) {
        for (int st = 0; st < IN_STAGES; st++) {
            v = v.fma(SIGN[st], v.rearrange(SWAP[st]));
        }
        return v;
    }

    /** The four in-vector stages of a 16-lane vector. */
    private static FloatVector in16(FloatVector v) {
        v = v.fma(SG1, v.rearrange(SW1));
        v = v.fma(SG2, v.rearrange(SW2));
        v = v.fma(SG4, v.rearrange(SW4));
        return v.fma(SG8, v.rearrange(SW8));
    }

    /** d = 64 with 16 lanes: all six stages in registers, then ×s (×σ). */
    private static void block64(float[] x, int o, float[] sigma, float s) {
        FloatVector v0 = in16(FloatVector.fromArray(F, x, o));
        FloatVector v1 = in16(FloatVector.fromArray(F, x, o + 16));
        FloatVector v2 = in16(FloatVector.fromArray(F, x, o + 32));
        FloatVector v3 = in16(FloatVector.fromArray(F, x, o + 48));
        FloatVector a0 = v0.add(v1);
        FloatVector a1 = v0.sub(v1);
        FloatVector a2 = v2.add(v3);
        FloatVector a3 = v2.sub(v3);
        out(a0.add(a2), x, o, sigma, 0, s);
        out(a1.add(a3), x, o + 16, sigma, 16, s);
        out(a0.sub(a2), x, o + 32, sigma, 32, s);
        out(a1.sub(a3), x, o + 48, sigma, 48, s);
    }

    /** Stages h = 1 … 64 of the 128 elements at x[o] in registers; when last, also ×s (×σ from sigma[so]). */
    private static void block128(float[] x, int o, boolean last, float[] sigma, int so, float s) {
        FloatVector v0 = in16(FloatVector.fromArray(F, x, o));
        FloatVector v1 = in16(FloatVector.fromArray(F, x, o + 16));
        FloatVector v2 = in16(FloatVector.fromArray(F, x, o + 32));
        FloatVector v3 = in16(FloatVector.fromArray(F, x, o + 48));
        FloatVector v4 = in16(FloatVector.fromArray(F, x, o + 64));
        FloatVector v5 = in16(FloatVector.fromArray(F, x, o + 80));
        FloatVector v6 = in16(FloatVector.fromArray(F, x, o + 96));
        FloatVector v7 = in16(FloatVector.fromArray(F, x, o + 112));
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
        if (last) {
            out(b0.add(b4), x, o, sigma, so, s);
            out(b1.add(b5), x, o + 16, sigma, so + 16, s);
            out(b2.add(b6), x, o + 32, sigma, so + 32, s);
            out(b3.add(b7), x, o + 48, sigma, so + 48, s);
            out(b0.sub(b4), x, o + 64, sigma, so + 64, s);
            out(b1.sub(b5), x, o + 80, sigma, so + 80, s);
            out(b2.sub(b6), x, o + 96, sigma, so + 96, s);
            out(b3.sub(b7), x, o + 112, sigma, so + 112, s);
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

    private static void out(FloatVector v, float[] x, int o, float[] sigma, int so, float s) {
        v = v.mul(s);
        if (sigma != null) {
            v = v.mul(FloatVector.fromArray(F, sigma, so));
        }
        v.intoArray(x, o);
    }

    /** Stages h = h0 … d/2 between whole vectors; the last one also applies ×s (and ×σ). */
    private static void crossStages(float[] x, int off, int d, int h0, float[] sigma, float s) {
        if (h0 >= d) {
            for (int i = 0; i < d; i += L) {
                out(FloatVector.fromArray(F, x, off + i), x, off + i, sigma, i, s);
            }
            return;
        }
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
        for (int k = 0; k < h; k += L) {
            FloatVector a = FloatVector.fromArray(F, x, off + k);
            FloatVector b = FloatVector.fromArray(F, x, off + k + h);
            out(a.add(b), x, off + k, sigma, k, s);
            out(a.sub(b), x, off + k + h, sigma, k + h, s);
        }
    }
}
