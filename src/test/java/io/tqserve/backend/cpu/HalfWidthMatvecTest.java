package io.tqserve.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.tqserve.backend.DType;
import io.tqserve.backend.Matrix;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The one-row kernel on 256-bit halves ({@link HalfWidthMatvec}) gives the bits of the 512-bit packed kernel (and so
 * of {@link PackedGemm}) and stays close to the scalar twin; {@link MatvecChoice} parses its setting, refuses what
 * the machine cannot run, and keeps the kernel with the higher median block rate.
 */
class HalfWidthMatvecTest {
    static final int L = VectorKernels.L;

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 64, 129})
    void halvesGiveTheBitsOfThe512BitKernelAndStayCloseToScalar(int steps) {
        assumeTrue(HalfWidthMatvec.applies(), "needs 512-bit vectors (species here: " + L + " floats)");
        int n = steps * L;
        try (Arena arena = Arena.ofConfined()) {
            Matrix w = KernelParityTest.matrix(arena, DType.BF16, 12, n, 17L * n);
            MemorySegment packed = arena.allocate(w.data().byteSize(), 64);
            for (int g = 0; g < 3; g++) {
                VectorMatmul.pack4(w.data(), 8L * n * g, packed, 8L * n * g, n);
            }
            float[] x = KernelParityTest.random(n + 5, n, 1f);
            for (int g = 0; g < 3; g++) {
                float[] full = new float[4];
                float[] halves = new float[4];
                float[] scalar = new float[4];
                VectorMatmul.matvec4Packed(packed, 8L * n * g, n, x, 5, full, 0);
                HalfWidthMatvec.matvec4Packed(packed, 8L * n * g, n, x, 5, halves, 0);
                KernelParityTest.SCA.matvec(w, 4 * g, 4, x, 5, scalar, 0);
                for (int q = 0; q < 4; q++) {
                    assertEquals(Float.floatToIntBits(full[q]), Float.floatToIntBits(halves[q]),
                            "group " + g + " row " + q);
                    assertEquals(scalar[q], halves[q], KernelParityTest.tol(n, 2f), "scalar twin, row " + q);
                }
            }
        }
    }

    /** Whichever kernel a fixed setting picks, a served one-row matmul has the bits of the multi-row GEMM's rows. */
    @ParameterizedTest
    @ValueSource(strings = {"256", "auto"})
    void backendDecodeMatchesTheBatchedRowsBitForBit(String setting) {
        assumeTrue(HalfWidthMatvec.applies(), "needs 512-bit vectors");
        String before = System.getProperty(MatvecChoice.PROPERTY);
        System.setProperty(MatvecChoice.PROPERTY, setting);
        int n = 5 * L;
        try (Arena arena = Arena.ofShared(); CpuBackend cpu = new CpuBackend(new VectorKernels(), 2, "test")) {
            Matrix w = KernelParityTest.matrix(arena, DType.BF16, 64, n, 23);
            cpu.prepare(List.of(w));
            assertTrue(cpu.repacked(w));
            float[] x = KernelParityTest.random(3 * n, 3 * n, 1f);
            float[] batch = new float[3 * 64];
            cpu.matmul(w, x, 3, batch);
            for (int r = 0; r < 3; r++) {
                float[] one = new float[64];
                cpu.matmul(w, java.util.Arrays.copyOfRange(x, r * n, (r + 1) * n), 1, one);
                for (int o = 0; o < 64; o++) {
                    assertEquals(Float.floatToIntBits(batch[r * 64 + o]), Float.floatToIntBits(one[o]),
                            "row " + r + " output " + o);
                }
            }
        } finally {
            if (before == null) {
                System.clearProperty(MatvecChoice.PROPERTY);
            } else {
                System.setProperty(MatvecChoice.PROPERTY, before);
            }
        }
    }

    @Test
    void settingIsParsedAndWhatTheMachineCannotRunIsRefused() {
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> MatvecChoice.of("1024"));
        assertTrue(bad.getMessage().contains(MatvecChoice.PROPERTY + "=1024"), bad.getMessage());
        assertThrows(IllegalArgumentException.class, () -> MatvecChoice.of("fast"));
        if (HalfWidthMatvec.applies()) {
            assertEquals(MatvecChoice.Kernel.HALVES, MatvecChoice.of("256").chosen());
            assertEquals(MatvecChoice.Kernel.FULL, MatvecChoice.of(" 512 ").chosen());
            assertNull(MatvecChoice.of("auto").chosen(), "auto calibrates");
            assertNull(MatvecChoice.of(null).chosen(), "unset means auto");
        } else {
            IllegalArgumentException wide = assertThrows(IllegalArgumentException.class, () -> MatvecChoice.of("512"));
            assertTrue(wide.getMessage().contains("512-bit"), wide.getMessage());
            assertEquals(MatvecChoice.Kernel.FULL, MatvecChoice.of("auto").chosen());
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void calibrationKeepsTheKernelWithTheHigherMedianRate(boolean halvesFaster) {
        assumeTrue(HalfWidthMatvec.applies(), "needs 512-bit vectors");
        MatvecChoice c = MatvecChoice.of("auto");
        MatvecChoice.Kernel fast = halvesFaster ? MatvecChoice.Kernel.HALVES : MatvecChoice.Kernel.FULL;
        MatvecChoice.Kernel slow = halvesFaster ? MatvecChoice.Kernel.FULL : MatvecChoice.Kernel.HALVES;
        // warm-up bytes are not timed: a slow first block (the interpreter) must not count
        c.record(fast, MatvecChoice.WARM_BYTES, 1_000_000_000L);
        c.record(slow, MatvecChoice.WARM_BYTES, 1);
        for (int i = 0; i < MatvecChoice.SAMPLES; i++) {
            assertNull(c.chosen(), "undecided before every sample is in");
            // the fast kernel: 20 GB/s, with one outlier; the slow one: 15 GB/s with one lucky block
            c.record(fast, 20_000, i == 3 ? 10_000 : 1_000);
            c.record(slow, 15_000, i == 5 ? 100 : 1_000);
        }
        assertEquals(fast, c.chosen());
        assertTrue(c.outcome().contains("20.0 GB/s") && c.outcome().contains("15.0 GB/s"), c.outcome());
    }
}
