package io.tqserve.kv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.tqserve.kv.turbo.KeyQuant;
import io.tqserve.kv.turbo.TurboCodec;
import io.tqserve.kv.turbo.TurboLayout;
import org.junit.jupiter.api.Test;

/** Exact bytes per token: the table of SPEC §8, the bf16 and uniform baselines, whole models, and the codecs. */
class KvLayoutTest {
    private static final int[] K_BITS = {8, 5, 4, 2};
    private static final int[] V_BITS = {2, 3, 4, 5, 8};
    private static final int[] HEAD_DIMS = {64, 128, 256, 512};

    /** SPEC §8, bytes per token per head: rows K = 8, 5, 4, 2; columns V = 2, 3, 4, 5, 8; at d = 64. */
    private static final int[][] SPEC_D64 = {
        {92, 100, 108, 116, 140},
        {68, 76, 84, 92, 116},
        {60, 68, 76, 84, 108},
        {44, 52, 60, 68, 92},
    };

    @Test
    void turboBytesEqualSpecTableForEveryPairAndHeadDim() {
        for (int r = 0; r < K_BITS.length; r++) {
            for (int c = 0; c < V_BITS.length; c++) {
                KvScheme.Turbo t = new KvScheme.Turbo(K_BITS[r], V_BITS[c]);
                for (int d : HEAD_DIMS) {
                    int expected = SPEC_D64[r][c] * d / 64; // every cell scales linearly with d
                    assertEquals(expected, KvLayout.bytesPerTokenPerHead(t, d), t + " d=" + d);
                    assertEquals(expected, TurboLayout.of(t, d).bytes(), t + " d=" + d);
                    assertEquals(expected, TurboCodec.of(t, d).entryBytes());
                    assertEquals(32.0 / (K_BITS[r] + V_BITS[c] + 1.5), KvLayout.of(t, 1, 1, d).compressionRatio(), 1e-12);
                }
            }
        }
    }

    @Test
    void k8v3AtHeadDim128Is200BytesAnd256x() {
        KvLayout l = KvLayout.of(KvScheme.TURBO_DEFAULT, 1, 1, 128);
        assertEquals(200, l.bytesPerTokenPerHead());
        assertEquals(2.56, l.compressionRatio(), 1e-12);
        assertEquals(6.25, l.effectiveBits(), 1e-12);
        TurboLayout t = TurboLayout.of((KvScheme.Turbo) KvScheme.TURBO_DEFAULT, 128);
        assertEquals(0, t.keyCodesOffset());
        assertEquals(128, t.keyScalesOffset());
        assertEquals(136, t.keyZerosOffset());
        assertEquals(144, t.valueCodesOffset());
        assertEquals(192, t.valueScalesOffset());
        assertEquals(200, t.bytes());
    }

    @Test
    void unsignedEightBitKeysHaveTheSameSizeAsSigned() {
        for (int d : HEAD_DIMS) {
            assertEquals(new TurboLayout(KeyQuant.Q8_0, 3, d).bytes(), new TurboLayout(KeyQuant.UINT8, 3, d).bytes());
        }
    }

    @Test
    void bf16IsFourBytesPerHeadDimElement() {
        for (int d : new int[] {1, 7, 64, 96, 128, 256}) {
            assertEquals(4 * d, KvLayout.bytesPerTokenPerHead(KvScheme.BF16, d));
            assertEquals(4 * d, new Bf16Codec(d).entryBytes());
        }
    }

    @Test
    void uniformBaselinesStoreCodesAndFp16ScaleAndBiasPerGroupOf64() {
        // int8 at d=128: K 128 + 2 groups·(2+2) = 136, same for V: 272. int4: (64 + 8)·2 = 144.
        assertEquals(272, KvLayout.bytesPerTokenPerHead(new KvScheme.Uniform(8), 128));
        assertEquals(144, KvLayout.bytesPerTokenPerHead(new KvScheme.Uniform(4), 128));
        for (int bits : new int[] {8, 4}) {
            for (int d : new int[] {64, 128, 192, 256, 512}) {
                KvScheme.Uniform u = new KvScheme.Uniform(bits);
                int expected = 2 * (d * bits / 8 + 4 * (d / 64));
                assertEquals(expected, KvLayout.bytesPerTokenPerHead(u, d));
                assertEquals(expected, new UniformAffineCodec(u, d).entryBytes());
            }
        }
        assertEquals(8.5, KvLayout.of(new KvScheme.Uniform(8), 1, 1, 128).effectiveBits(), 1e-12);
        assertEquals(4.5, KvLayout.of(new KvScheme.Uniform(4), 1, 1, 128).effectiveBits(), 1e-12);
    }

    @Test
    void wholeModelBytesMultiplyLayersAndKvHeads() {
        KvLayout l = KvLayout.of(KvScheme.TURBO_DEFAULT, 24, 8, 128);
        assertEquals(200L * 24 * 8, l.bytesPerToken());
        assertEquals(200L * 24 * 8 * 4096, l.bytesFor(4096));
        assertEquals(512L * 24 * 8, KvLayout.of(KvScheme.BF16, 24, 8, 128).bytesPerToken());
    }

    @Test
    void rejectsHeadDim96ForTurboSchemeAnd96ForUniform() {
        assertThrows(IllegalArgumentException.class, () -> KvLayout.of(KvScheme.TURBO_DEFAULT, 1, 1, 96));
        assertThrows(IllegalArgumentException.class, () -> KvLayout.of(new KvScheme.Uniform(4), 1, 1, 96));
        assertThrows(IllegalArgumentException.class, () -> new UniformAffineCodec(new KvScheme.Uniform(8), 96));
    }
}
