package io.tqserve.kv.turbo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class TurboSoftmaxTest {

    static float[] random(int n, long seed, float spread) {
        Random r = new Random(seed);
        float[] x = new float[n + 3];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) r.nextGaussian() * spread;
        }
        return x;
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 7, 15, 16, 31, 33, 127, 4097})
    void vectorKernelIsBitIdenticalToItsScalarTwinAndMatchesDoubleSoftmax(int n) {
        for (float spread : new float[] {0.01f, 1f, 30f}) {
            float[] a = random(n, n * 7L, spread);
            float[] b = a.clone();
            double[] ref = new double[n];
            float max = Float.NEGATIVE_INFINITY;
            for (int i = 0; i < n; i++) {
                max = Math.max(max, a[3 + i]);
            }
            double sum = 0;
            for (int i = 0; i < n; i++) {
                ref[i] = Math.exp(a[3 + i] - max); // the float difference, as any float softmax takes it
                sum += ref[i];
            }
            TurboParity.VEC.softmax(a, 3, n);
            TurboParity.SCA.softmax(b, 3, n);
            assertArrayEquals(b, a);
            for (int i = 0; i < n; i++) {
                assertEquals(ref[i] / sum, a[3 + i], 2e-6 * ref[i] / sum + 1e-30, "element " + i);
            }
        }
    }

    @Test
    void expIsWithinTwoUlpsOfMathExpDownToTheCutoffAndZeroBelow() {
        for (float x = 0f; x > -86f; x -= 0.0137f) {
            float e = (float) Math.exp(x);
            assertTrue(Math.abs(TurboSoftmax.exp(x) - e) <= 2 * Math.ulp(e), x + ": " + TurboSoftmax.exp(x) + " vs " + e);
        }
        assertEquals(1f, TurboSoftmax.exp(0f));
        assertEquals(0f, TurboSoftmax.exp(-86.5f));
        assertEquals(0f, TurboSoftmax.exp(Float.NEGATIVE_INFINITY));
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 33, 4097})
    void extremeScoresStayFiniteAndSumToOne(int n) {
        float[] x = random(n, 21, 1f);
        x[3] = 1e30f;
        if (n > 1) {
            x[3 + n - 1] = -1e30f;
        }
        float[] y = x.clone();
        TurboParity.VEC.softmax(x, 3, n);
        TurboParity.SCA.softmax(y, 3, n);
        assertArrayEquals(y, x);
        assertEquals(1f, x[3]);
        for (int i = 0; i < n; i++) {
            assertTrue(Float.isFinite(x[3 + i]));
        }
    }
}
