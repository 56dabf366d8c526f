package io.tqserve.kv.turbo;

import static io.tqserve.kv.turbo.TurboGoldenTest.floatBits;
import static io.tqserve.kv.turbo.TurboGoldenTest.hexBits;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/** The generated constants (tools/gen_turbo_tables.py) equal goldens/turboquant/tables.json. */
class TurboConstantsTest {
    private static final JsonNode TABLES = GoldenFiles.read("tables.json");

    @Test
    void signVectorsEqualTablesJsonForEveryHeadDim() {
        for (int d : TurboConstants.HEAD_DIMS) {
            JsonNode f = TABLES.get("fwht").get(Integer.toString(d));
            int[] signs = GoldenFiles.ints(f.get("signs"));
            int[] sign01 = GoldenFiles.ints(f.get("sign01"));
            float[] ours = TurboConstants.signs(d);
            assertEquals(d, ours.length);
            for (int i = 0; i < d; i++) {
                assertEquals(signs[i], (int) ours[i], "d=" + d + " sign " + i);
                assertEquals(sign01[i] == 1 ? -1 : 1, signs[i], "sign01 1 means -1");
            }
        }
    }

    @Test
    void signVectorsAreIndependentDrawsNotPrefixes() {
        assertEquals(1f, TurboConstants.signs(64)[0]);
        assertEquals(-1f, TurboConstants.signs(128)[0]);
    }

    @Test
    void invSqrtNEqualsTablesJson() {
        for (int d : TurboConstants.HEAD_DIMS) {
            JsonNode f = TABLES.get("fwht").get(Integer.toString(d));
            assertEquals(GoldenFiles.f32Bits(f.get("inv_sqrt_n_f32_hex")),
                    Float.floatToRawIntBits(TurboConstants.invSqrtN(d)), "d=" + d);
        }
    }

    @Test
    void codebooksAndMetalBoundariesEqualTablesJson() {
        for (int b : TurboConstants.V_BITS) {
            JsonNode cb = TABLES.get("value_codebooks").get(Integer.toString(b));
            assertArrayEquals(hexBits(cb.get("centroids_f32_hex")), floatBits(TurboConstants.centroids(b)), "bits " + b);
            assertArrayEquals(hexBits(cb.get("metal_boundaries_f32_hex")), floatBits(TurboConstants.boundaries(b)),
                    "bits " + b);
            float[] c = TurboConstants.centroids(b);
            for (int i = 1; i < c.length; i++) {
                assertTrue(c[i - 1] < c[i], "ascending centroids");
            }
        }
    }

    @Test
    void metalThreeBitBoundaryIsOneUlpBelowThePythonLiteral() {
        float[] metal = TurboConstants.boundaries(3);
        assertEquals(0x3FDFBC2B, Float.floatToRawIntBits(metal[6]));
        assertEquals(0x3FDFBC2C, Float.floatToRawIntBits(1.74793f));
    }

    @Test
    void rejectsHeadDim96AndValueBits6() {
        assertThrows(IllegalArgumentException.class, () -> TurboConstants.signs(96));
        assertThrows(IllegalArgumentException.class, () -> TurboConstants.centroids(6));
        assertThrows(IllegalArgumentException.class, () -> new TurboLayout(KeyQuant.Q8_0, 3, 96));
    }

    @Test
    void publicAccessorsReturnCopies() {
        TurboConstants.centroids(3)[0] = 42f;
        TurboConstants.signs(64)[0] = 42f;
        assertEquals(Float.intBitsToFloat(0xC009B98C), TurboConstants.centroids(3)[0]);
        assertEquals(1f, TurboConstants.signs(64)[0]);
    }
}
