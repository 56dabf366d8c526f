package io.tqserve.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The column-blocked prefill kernel: the bits of the unblocked tiles (batch invariance), close to the scalar twin. */
class BlockedGemmTest {

    @ParameterizedTest
    @ValueSource(ints = {1, 7, 8, 33, 511, 512, 513, 1000, 2048, 4097})
    void blockedRowsGiveTheBitsOfTheTilesAndOfDecode(int n) {
        for (int xRows : new int[] {1, 2, 3, 16, 17}) {
            float[] w = KernelParityTest.random(4 * n, 5L * n, 2f);
            float[] x = KernelParityTest.random(xRows * n, 7L * n + xRows, 1f);
            int stride = 9;
            float[] blocked = new float[xRows * stride];
            BlockedGemm.rows4(w, x, xRows, n, blocked, 2, stride);
            for (int r = 0; r < xRows; r++) {
                float[] one = new float[4];
                KernelParityTest.VEC.tile(w, 0, 4, x, r * n, 1, n, one, 0, 0);
                for (int q = 0; q < 4; q++) {
                    float got = blocked[2 + r * stride + q];
                    assertEquals(Float.floatToIntBits(one[q]), Float.floatToIntBits(got),
                            "n " + n + " x rows " + xRows + " row " + r + " w row " + q);
                    assertEquals(KernelParityTest.SCA.dot(w, q * n, x, r * n, n), got, KernelParityTest.tol(n, 2f),
                            "scalar twin");
                }
            }
        }
    }
}
