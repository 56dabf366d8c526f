package io.tqserve.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.junit.jupiter.api.Test;

/** {@link LaneSums} against its scalar twin {@link VectorKernels#sumLanes}: the same bits for every output. */
class LaneSumsTest {
    @Test
    void vectorSumsGiveTheBitsOfTheScalarFold() {
        assumeTrue(LaneSums.applies(), "16-lane vectors only");
        int l = VectorKernels.L;
        for (int seed = 0; seed < 50; seed++) {
            // magnitudes spread over many binades, so a different order of additions would round differently
            float[] acc = KernelParityTest.random(24 * 4 * l, 31L * seed + 1, 1f);
            for (int i = 0; i < acc.length; i++) {
                acc[i] *= (float) Math.pow(2, (i * 7 + seed) % 23 - 11);
            }
            int[] runs = {0, 5 * 4 * l, 7 * 4 * l + 3, seed % 2 == 0 ? 5 * 4 * l : 20 * 4 * l};
            float[] dst = new float[16 + 2];
            LaneSums.sums(acc, runs[0], runs[1], runs[2], runs[3], dst, 2);
            for (int i = 0; i < 4; i++) {
                for (int q = 0; q < 4; q++) {
                    float want = VectorKernels.sumLanes(acc.clone(), runs[i] + q * l);
                    assertEquals(Float.floatToIntBits(want), Float.floatToIntBits(dst[2 + 4 * i + q]),
                            "seed " + seed + " run " + i + " row " + q);
                }
            }
        }
    }
}
