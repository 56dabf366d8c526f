package io.tqserve.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The FMA-peak loop computes what its scalar twin computes (so the JIT cannot drop it as dead work). */
class FmaPeakTest {
    @ParameterizedTest
    @ValueSource(ints = {0, 1, 7, 1000})
    void chainsMatchTheScalarTwinBitForBit(int iters) {
        float v = FmaPeak.chains(iters, 1.5f);
        assertEquals(Float.floatToIntBits(FmaPeak.chainsScalar(iters, 1.5f)), Float.floatToIntBits(v));
        if (iters > 0) {
            assertTrue(v != FmaPeak.chainsScalar(0, 1.5f), "the chains moved");
        }
    }
}
