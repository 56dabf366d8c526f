package io.tqserve.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.DType;
import io.tqserve.backend.Matrix;
import java.lang.foreign.Arena;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The multi-row paths over repacked quantized matrices (the register tiles of {@link QuantizedTiles} for 8-bit codes
 * on the float kernels, and the 4-bit paths): every output of a pass has the bits of its activation row run alone
 * through the one-row kernel (batch invariance), on shapes that take several spans of weight rows, several column
 * blocks with a partial last one and leftover activation rows; and each output agrees with the scalar twin (the
 * scalar backend on the float path, {@link QuantizedInt8#dot} on the integer one).
 */
class QuantizedTilesTest {

    @ParameterizedTest
    @CsvSource({"8, 64, BF16, FLOAT, 11", "8, 64, F32, FLOAT, 4", "8, 64, BF16, AUTO, 9", "4, 64, BF16, AUTO, 11",
        "4, 128, BF16, AUTO, 5", "4, 64, F16, AUTO, 3"})
    void passesGiveTheOneRowBitsAndAgreeWithTheScalarTwin(int bits, int groupSize, DType scaleType,
            QuantActivations activations, int groups) {
        int cols = groups * groupSize;
        int outRows = 72;
        try (Arena arena = Arena.ofShared();
                CpuBackend fast = new CpuBackend(new VectorKernels(), 2, "tiles", activations);
                CpuBackend scalar = new CpuBackend(new ScalarKernels(), 1, "scalar")) {
            Matrix w = QuantizedKernelParityTest.quantized(arena, outRows, cols, bits, groupSize, scaleType, 31);
            fast.prepare(List.of(w));
            assertTrue(fast.repacked(w), "rows in fours are repacked");
            assertTrue(bits == 4 || QuantizedTiles.applies(bits, groupSize), "8-bit groups of 64 take the tiles");
            for (int batch : new int[] {4, 7, 13, 20}) {
                float[] x = KernelParityTest.random(batch * cols, batch + bits, 1f);
                float[] all = new float[batch * outRows];
                fast.matmul(w, x, batch, all);
                float[] twin = new float[batch * outRows];
                scalar.matmul(w, x, batch, twin);
                for (int r = 0; r < batch; r++) {
                    float[] xr = Arrays.copyOfRange(x, r * cols, (r + 1) * cols);
                    float[] one = new float[outRows];
                    fast.matmul(w, xr, 1, one);
                    for (int o = 0; o < outRows; o++) {
                        assertEquals(Float.floatToIntBits(one[o]), Float.floatToIntBits(all[r * outRows + o]),
                                bits + "-bit " + activations + " batch " + batch + " row " + r + " out " + o);
                    }
                    float[] got = Arrays.copyOfRange(all, r * outRows, (r + 1) * outRows);
                    if (activations.integer(w)) {
                        QuantizedKernelParityTest.int8AgreesWithTwinAndDense(w, activations.range(w), xr, got,
                                "batch " + batch + " row " + r);
                    } else {
                        for (int o = 0; o < outRows; o++) {
                            float m = 0;
                            for (int c = 0; c < cols; c++) {
                                m = Math.max(m, Math.abs(w.get(o, c)));
                            }
                            assertEquals(twin[r * outRows + o], got[o], 2 * KernelParityTest.tol(cols, m),
                                    "against the scalar twin, batch " + batch + " row " + r + " out " + o);
                        }
                    }
                }
            }
        }
    }
}
