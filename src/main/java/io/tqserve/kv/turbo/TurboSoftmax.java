package io.tqserve.kv.turbo;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The softmax of the turbo attention paths, with a polynomial exp built from float32 adds, multiplies and fmas
 * only, so that the Vector API kernel and its scalar twin give bit-identical results, before and after JIT
 * compilation. (The backend's softmax calls Math.exp per element for that reason, which makes the exp a large share
 * of fused attention at long contexts. {@code VectorOperators.EXP} is not an option: its results may differ
 * between the interpreter and compiled code.) Written by hand because no maintained Java library offers a
 * reproducible vector exp.
 *
 * <p>exp(x) for x ≤ 0 (scores minus their max): n = rint(x·log2 e) via the 1.5·2^23 rounding constant,
 * r = x − n·ln2 (Cody–Waite, two fmas), exp(r) by Cephes' expf polynomial (degree 6, about 1 ulp on
 * |r| ≤ ln2/2), times 2^n by adding n to the exponent bits; x < −86 gives 0 (probabilities below 5e-38 relative
 * to the largest). The sum runs over 16 interleaved partial sums (element i into partial i mod 16, tails included)
 * then those in order, whatever the lane count.
 */
final class TurboSoftmax {
    private static final VectorSpecies<Float> F = FusedScores.F;
    private static final int L = FusedScores.L;
    private static final float LOG2E = 1.44269504088896341f;
    private static final float LN2_HI = 0.693359375f;
    private static final float LN2_LO = -2.12194440e-4f;
    private static final float ROUND = 12582912f; // 1.5·2^23: x + ROUND − ROUND rounds to the nearest integer
    /** Below this exp is taken as 0 (2^n must stay a normal scale factor: n ≥ −124). */
    private static final float LOW = -86f;
    private static final float P0 = 1.9875691500e-4f;
    private static final float P1 = 1.3981999507e-3f;
    private static final float P2 = 8.3334519073e-3f;
    private static final float P3 = 4.1665795894e-2f;
    private static final float P4 = 1.6666665459e-1f;
    private static final float P5 = 5.0000001201e-1f;
    private static final int PARTIALS = 16;
    private static final ThreadLocal<float[]> SUMS = ThreadLocal.withInitial(() -> new float[PARTIALS]);

    private TurboSoftmax() {
    }

    /** In place over x[off, off+n), Vector API (8 or 16 lanes: {@link FusedScores#SUPPORTED}). */
    static void vector(float[] x, int off, int n) {
        softmax(x, off, n, true);
    }

    /** The scalar twin of {@link #vector}, bit for bit. */
    static void scalar(float[] x, int off, int n) {
        softmax(x, off, n, false);
    }

    private static void softmax(float[] x, int off, int n, boolean vector) {
        float max = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < n; i++) {
            max = Math.max(max, x[off + i]);
        }
        float[] sums = SUMS.get();
        java.util.Arrays.fill(sums, 0f);
        int i = 0;
        if (vector) {
            FloatVector s0 = FloatVector.zero(F);
            FloatVector s1 = FloatVector.zero(F);
            FloatVector m = FloatVector.broadcast(F, max);
            for (int bound = n - PARTIALS; i <= bound; i += PARTIALS) {
                for (int h = 0; h < PARTIALS; h += L) {
                    FloatVector v = FloatVector.fromArray(F, x, off + i + h).sub(m);
                    FloatVector t = v.mul(LOG2E).add(ROUND);
                    FloatVector nf = t.sub(ROUND);
                    FloatVector r = nf.fma(FloatVector.broadcast(F, -LN2_HI), v);
                    r = nf.fma(FloatVector.broadcast(F, -LN2_LO), r);
                    FloatVector r2 = r.mul(r);
                    FloatVector p = r.fma(P0, P1).fma(r, FloatVector.broadcast(F, P2)).fma(r, FloatVector.broadcast(F, P3))
                            .fma(r, FloatVector.broadcast(F, P4)).fma(r, FloatVector.broadcast(F, P5))
                            .fma(r2, r.add(1f));
                    IntVector e = t.reinterpretAsInts().sub(Float.floatToRawIntBits(ROUND)).lanewise(VectorOperators.LSHL, 23);
                    FloatVector y = p.reinterpretAsInts().add(e).reinterpretAsFloats()
                            .blend(FloatVector.zero(F), v.compare(VectorOperators.LT, LOW));
                    y.intoArray(x, off + i + h);
                    if (h == 0) {
                        s0 = s0.add(y);
                    } else {
                        s1 = s1.add(y);
                    }
                }
            }
            s0.intoArray(sums, 0);
            if (L < PARTIALS) {
                s1.intoArray(sums, L);
            }
        } else {
            for (int bound = n - PARTIALS; i <= bound; i += PARTIALS) {
                for (int k = 0; k < PARTIALS; k++) {
                    float y = exp(x[off + i + k] - max);
                    x[off + i + k] = y;
                    sums[k] += y;
                }
            }
        }
        for (int k = 0; i < n; i++, k++) {
            float y = exp(x[off + i] - max);
            x[off + i] = y;
            sums[k] += y;
        }
        float sum = 0f;
        for (int k = 0; k < PARTIALS; k++) {
            sum += sums[k];
        }
        float inv = 1f / sum;
        for (int j = 0; j < n; j++) {
            x[off + j] *= inv;
        }
    }

    /** The scalar exp of the kernel above (x ≤ 0), bit for bit. */
    static float exp(float v) {
        float t = v * LOG2E + ROUND;
        float nf = t - ROUND;
        float r = Math.fma(nf, -LN2_HI, v);
        r = Math.fma(nf, -LN2_LO, r);
        float r2 = r * r;
        float p = Math.fma(r, P0, P1);
        p = Math.fma(p, r, P2);
        p = Math.fma(p, r, P3);
        p = Math.fma(p, r, P4);
        p = Math.fma(p, r, P5);
        p = Math.fma(p, r2, r + 1f);
        int e = (Float.floatToRawIntBits(t) - Float.floatToRawIntBits(ROUND)) << 23;
        float y = Float.intBitsToFloat(Float.floatToRawIntBits(p) + e);
        return v < LOW ? 0f : y;
    }
}
