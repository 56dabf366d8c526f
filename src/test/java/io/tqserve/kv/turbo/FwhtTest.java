package io.tqserve.kv.turbo;

import static io.tqserve.kv.turbo.TurboGoldenTest.floatBits;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Random;
import org.junit.jupiter.api.Test;

/** FWHT: orthonormal, its own inverse, and the vector kernel equals its scalar twin bit for bit. */
class FwhtTest {

    @Test
    void transformIsOrthonormalForEveryHeadDim() {
        for (int d : TurboConstants.HEAD_DIMS) {
            // Columns H·e_i: unit norm, pairwise orthogonal (checked through H·H = I on every basis vector).
            float[] col = new float[d];
            for (int i = 0; i < d; i++) {
                java.util.Arrays.fill(col, 0f);
                col[i] = 1f;
                Fwht.transform(col, 0, d);
                double norm = 0;
                for (float v : col) {
                    norm += (double) v * v;
                }
                assertEquals(1.0, norm, 1e-6, "column norm, d=" + d);
                Fwht.transform(col, 0, d);
                for (int j = 0; j < d; j++) {
                    assertEquals(i == j ? 1.0 : 0.0, col[j], 1e-6, "H·H·e_" + i + " at " + j + ", d=" + d);
                }
            }
        }
    }

    @Test
    void transformIsItsOwnInverseAndPreservesNorm() {
        Random rnd = new Random(7);
        for (int d : TurboConstants.HEAD_DIMS) {
            for (int t = 0; t < 50; t++) {
                float[] x = gaussian(rnd, d);
                float[] y = x.clone();
                Fwht.transform(y, 0, d);
                assertEquals(norm(x), norm(y), 1e-6 * Math.max(1, norm(x)), "norm, d=" + d);
                Fwht.transform(y, 0, d);
                for (int i = 0; i < d; i++) {
                    assertEquals(x[i], y[i], 1e-6, "H·H·x, d=" + d);
                }
            }
        }
    }

    @Test
    void unrotateInvertsRotate() {
        Random rnd = new Random(11);
        for (int d : TurboConstants.HEAD_DIMS) {
            float[] x = gaussian(rnd, d);
            float[] y = x.clone();
            Fwht.rotate(y, 0, d);
            Fwht.unrotate(y, 0, d);
            for (int i = 0; i < d; i++) {
                assertEquals(x[i], y[i], 1e-6);
            }
        }
    }

    @Test
    void vectorTransformEqualsScalarTwinForEveryPowerOfTwoAndExtremeValues() {
        Random rnd = new Random(3);
        float[] extremes = {0f, -0f, Float.MIN_VALUE, -Float.MIN_VALUE, Float.MIN_NORMAL, 65504f, -65504f,
            Float.MAX_VALUE, -Float.MAX_VALUE, 1e30f, -1e-30f, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY,
            Float.NaN};
        for (int d = 1; d <= 4096; d <<= 1) {
            float s = (float) (1.0 / Math.sqrt(d));
            for (int t = 0; t < 4; t++) {
                float[] x = new float[d + 3];
                for (int i = 0; i < x.length; i++) {
                    x[i] = t == 0 ? (float) rnd.nextGaussian()
                            : rnd.nextInt(4) == 0 ? extremes[rnd.nextInt(extremes.length)]
                            : (float) (rnd.nextGaussian() * Math.pow(10, rnd.nextInt(60) - 30));
                }
                float[] sigma = new float[d];
                for (int i = 0; i < d; i++) {
                    sigma[i] = rnd.nextBoolean() ? 1f : -1f;
                }
                for (float[] sg : new float[][] {null, sigma}) {
                    float[] a = x.clone();
                    float[] b = x.clone();
                    TurboParity.SCA.transform(a, 3, d, sg, s);
                    TurboParity.VEC.transform(b, 3, d, sg, s);
                    assertArrayEquals(floatBits(a), floatBits(b), "d=" + d + " trial " + t);
                }
                if (TurboConstants.supportsHeadDim(d)) {
                    float[] a = x.clone();
                    float[] b = x.clone();
                    TurboParity.SCA.rotate(a, 3, d, sigma);
                    TurboParity.VEC.rotate(b, 3, d, sigma);
                    assertArrayEquals(floatBits(a), floatBits(b), "rotate d=" + d);
                }
            }
        }
    }

    static float[] gaussian(Random rnd, int d) {
        float[] x = new float[d];
        for (int i = 0; i < d; i++) {
            x[i] = (float) rnd.nextGaussian();
        }
        return x;
    }

    private static double norm(float[] x) {
        double s = 0;
        for (float v : x) {
            s += (double) v * v;
        }
        return Math.sqrt(s);
    }
}
