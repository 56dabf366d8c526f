package io.tqserve.kv.turbo;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * Vector API twin of {@link Fwht}'s scalar butterflies, bit-identical to them: every output is the same single
 * float32 add or subtract of the same two operands. Stages with h below the lane count run inside one vector
 * (a lane swap by XOR h, then a+b in the lower lane and a−b in the upper one); the wider stages pair whole vectors.
 */
final class VectorFwht {
    static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    private static final int L = F.length();
    private static final int IN_STAGES = Integer.numberOfTrailingZeros(L);
    @SuppressWarnings("unchecked")
    private static final VectorShuffle<Float>[] SWAP = new VectorShuffle[IN_STAGES];
    @SuppressWarnings("unchecked")
    private static final VectorMask<Float>[] UPPER = new VectorMask[IN_STAGES];

    static {
        for (int s = 0; s < IN_STAGES; s++) {
            int h = 1 << s;
            SWAP[s] = VectorShuffle.fromOp(F, i -> i ^ h);
            boolean[] upper = new boolean[L];
            for (int i = 0; i < L; i++) {
                upper[i] = (i & h) != 0;
            }
            UPPER[s] = VectorMask.fromArray(F, upper, 0);
        }
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
            FloatVector v = FloatVector.fromArray(F, x, off + i).mul(FloatVector.fromArray(F, sigma, i));
            inVector(v).intoArray(x, off + i);
        }
        crossStages(x, off, d, null, TurboConstants.invSqrtN(d));
    }

    /** Butterflies, then ×s, then ×σ when sigma is not null. */
    static void transform(float[] x, int off, int d, float[] sigma, float s) {
        Fwht.checkLength(x, off, d);
        if (d < L) {
            Fwht.transformScalar(x, off, d, sigma, s);
            return;
        }
        for (int i = 0; i < d; i += L) {
            inVector(FloatVector.fromArray(F, x, off + i)).intoArray(x, off + i);
        }
        crossStages(x, off, d, sigma, s);
    }

    private static FloatVector inVector(FloatVector v) {
        for (int st = 0; st < IN_STAGES; st++) {
            FloatVector t = v.rearrange(SWAP[st]);
            v = v.add(t).blend(t.sub(v), UPPER[st]);
        }
        return v;
    }

    /** Stages h = L … d/2 between whole vectors; the last one also applies ×s (and ×σ). */
    private static void crossStages(float[] x, int off, int d, float[] sigma, float s) {
        if (d == L) {
            scale(x, off, d, sigma, s);
            return;
        }
        for (int h = L; h < d >> 1; h <<= 1) {
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
            FloatVector lo = a.add(b).mul(s);
            FloatVector hi = a.sub(b).mul(s);
            if (sigma != null) {
                lo = lo.mul(FloatVector.fromArray(F, sigma, k));
                hi = hi.mul(FloatVector.fromArray(F, sigma, k + h));
            }
            lo.intoArray(x, off + k);
            hi.intoArray(x, off + k + h);
        }
    }

    private static void scale(float[] x, int off, int d, float[] sigma, float s) {
        for (int i = 0; i < d; i += L) {
            FloatVector v = FloatVector.fromArray(F, x, off + i).mul(s);
            if (sigma != null) {
                v = v.mul(FloatVector.fromArray(F, sigma, i));
            }
            v.intoArray(x, off + i);
        }
    }
}
