package io.tqserve.backend.mlx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxException;
import io.tqserve.backend.mlx.ffm.MlxScope;
import io.tqserve.backend.mlx.ffm.MlxStore;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The FFM bindings against a real libmlxc: status checks, error text, ownership, data in and out. */
@Tag("mlx")
class MlxBindingsTest {
    static Mlx mlx;

    /** Per test, so that each one is reported as skipped, with the places searched, when libmlxc is absent. */
    @BeforeEach
    void requireMlx() {
        mlx = MlxTestLibrary.open();
    }

    @Test
    void reportsMlxVersionAndDevice() {
        assertTrue(mlx.version().startsWith("0."), mlx.version());
        assertTrue(mlx.device().startsWith("Device("), mlx.device());
    }

    @Test
    void failedCallThrowsWithTheMessageMlxPassedToTheErrorHandler() {
        try (MlxScope s = mlx.newScope()) {
            MlxArray a = s.fromFloats(new float[6], 6);
            MlxException e = assertThrows(MlxException.class, () -> s.reshape(a, 4));
            assertTrue(e.getMessage().startsWith("mlx_reshape failed"), e.getMessage());
            assertTrue(e.getMessage().contains("[reshape]"), e.getMessage());
            // the runtime is still usable after an error
            assertArrayEquals(new float[6], s.toFloats(s.reshape(a, 2, 3)), 0f);
        }
    }

    @Test
    void closingAScopeFreesEveryArrayItMade() {
        long before = mlx.liveArrays();
        try (MlxScope s = mlx.newScope()) {
            MlxArray a = s.fromFloats(new float[] {1, 2, 3, 4}, 2, 2);
            MlxArray b = s.matmul(a, s.transpose(a, 1, 0));
            assertArrayEquals(new float[] {5, 11, 11, 25}, s.toFloats(b), 0f);
            assertTrue(mlx.liveArrays() > before);
        }
        assertEquals(before, mlx.liveArrays());
    }

    @Test
    void storeKeepsAnArrayAfterItsScopeCloses() {
        long before = mlx.liveArrays();
        try (MlxStore store = mlx.newStore()) {
            MlxArray kept;
            try (MlxScope s = mlx.newScope()) {
                kept = store.keep(s.add(s.fromFloats(new float[] {1, 2}, 2), s.scalar(0.5f)));
                s.eval(kept);
            }
            try (MlxScope s = mlx.newScope()) {
                assertArrayEquals(new float[] {1.5f, 2.5f}, s.toFloats(kept), 0f);
            }
        }
        assertEquals(before, mlx.liveArrays());
    }

    @Test
    void bfloat16AndFloat16RoundTripThroughAUint16View() {
        short[] bits = {0x3F80, (short) 0xC000, 0x7F80, 0x0001}; // bf16: 1, -2, inf, smallest subnormal
        try (MlxScope s = mlx.newScope()) {
            MlxArray b = s.fromBits16(bits, MlxDtype.BFLOAT16, 4);
            assertEquals(MlxDtype.BFLOAT16, b.dtype());
            assertArrayEquals(bits, s.toBits16(b));
            float[] f = s.toFloats(b);
            assertEquals(1f, f[0]);
            assertEquals(-2f, f[1]);
            assertEquals(Float.POSITIVE_INFINITY, f[2]);
            MlxArray h = s.astype(s.fromFloats(new float[] {1f, 65504f, 70000f, 1e-8f}, 4), MlxDtype.FLOAT16);
            assertArrayEquals(new short[] {0x3C00, 0x7BFF, 0x7C00, 0x0000}, s.toBits16(h));
        }
    }

    @Test
    void hadamardTransformIsNormalisedAndSelfInverse() {
        float[] x = new float[128];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) Math.sin(i * 0.37) * (i % 5);
        }
        try (MlxScope s = mlx.newScope()) {
            MlxArray a = s.fromFloats(x, 1, 128);
            float[] y = s.toFloats(s.hadamard(a));
            float[] back = s.toFloats(s.hadamard(s.hadamard(a)));
            double e1 = 0;
            double e2 = 0;
            for (int i = 0; i < x.length; i++) {
                e1 += x[i] * x[i];
                e2 += y[i] * y[i];
                assertEquals(x[i], back[i], 1e-5);
            }
            assertEquals(e1, e2, 1e-3 * e1);
        }
    }
}
