package io.tqserve.kv.turbo;

import static io.tqserve.kv.turbo.TurboGoldenTest.floatBits;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.kv.KvScheme;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Quality, linearity and robustness properties of the codec, beyond the golden vectors. */
class TurboCodecPropertyTest {

    @Test
    void valueRoundTripMseOnUnitNormalMatchesLloydMaxAt2To4Bits() {
        double[] expected = {0, 0, 0.112, 0.033, 0.009};
        for (int bits = 2; bits <= 4; bits++) {
            double mse = valueMse(bits, 128, 1000, 5);
            assertEquals(expected[bits], mse, 0.10 * expected[bits], "MSE at " + bits + " bits");
        }
    }

    @Test
    void valueMseFallsAboutFourTimesPerBit() {
        double prev = valueMse(2, 128, 300, 9);
        for (int bits : new int[] {3, 4, 5}) {
            double mse = valueMse(bits, 128, 300, 9);
            double ratio = prev / mse;
            assertTrue(ratio > 3.0 && ratio < 4.8, bits + " bits: ratio " + ratio);
            prev = mse;
        }
    }

    @Test
    void keyRoundTripMseMatchesSpecAnchors() {
        // Spec §9 (emulated Metal path, fp16 N(0,1), d=128): q8_0 2.3e-5, q5_0 1.51e-3, q4_0 6.49e-3, int2 0.162.
        assertEquals(2.3e-5, keyMse(KeyQuant.Q8_0), 0.2 * 2.3e-5);
        assertEquals(1.51e-3, keyMse(KeyQuant.Q5_0), 0.2 * 1.51e-3);
        assertEquals(6.49e-3, keyMse(KeyQuant.Q4_0), 0.2 * 6.49e-3);
        assertEquals(0.162, keyMse(KeyQuant.INT2), 0.2 * 0.162);
    }

    @Test
    void deferredValueDecodeThenInverseFwhtEqualsDirectDecode() {
        Random rnd = new Random(21);
        for (int d : TurboConstants.HEAD_DIMS) {
            for (int vBits : TurboConstants.V_BITS) {
                TurboLayout lay = new TurboLayout(KeyQuant.Q8_0, vBits, d);
                TurboCodec codec = new TurboCodec(lay);
                int tokens = 6;
                byte[] cache = new byte[tokens * lay.bytes()];
                float[] weights = new float[tokens];
                float[] direct = new float[d];
                float[] acc = new float[d];
                float[] row = new float[d];
                for (int t = 0; t < tokens; t++) {
                    float[] v = FwhtTest.gaussian(rnd, d);
                    codec.encode(v, 0, v, 0, cache, t * lay.bytes());
                    weights[t] = rnd.nextFloat();
                    MemorySegment seg = MemorySegment.ofArray(cache);
                    codec.decodeValue(seg, (long) t * lay.bytes(), row, 0);
                    float[] rot = new float[d];
                    codec.decodeValueRotated(seg, (long) t * lay.bytes(), rot, 0);
                    float[] deferred = rot.clone();
                    codec.unrotate(deferred, 0);
                    assertArrayEquals(floatBits(row), floatBits(deferred), "per token, bit for bit");
                    for (int i = 0; i < d; i++) {
                        direct[i] += weights[t] * row[i];
                        acc[i] += weights[t] * rot[i];
                    }
                }
                codec.unrotate(acc, 0);
                for (int i = 0; i < d; i++) {
                    assertEquals(direct[i], acc[i], 1e-5f * (1 + Math.abs(direct[i])), "weighted sum, d=" + d);
                }
            }
        }
    }

    @Test
    void vectorAndScalarCodecsWriteAndReadIdenticalBytesForEveryLayoutAndAwkwardOffsets() {
        Random rnd = new Random(5);
        try (Arena arena = Arena.ofConfined()) {
            for (int d : TurboConstants.HEAD_DIMS) {
                for (KeyQuant kq : KeyQuant.values()) {
                    for (int vBits : TurboConstants.V_BITS) {
                        TurboLayout lay = new TurboLayout(kq, vBits, d);
                        TurboCodec vec = new TurboCodec(lay, TurboParity.VEC);
                        TurboCodec sca = new TurboCodec(lay, TurboParity.SCA);
                        int[] offsets = {0, 1, 7, 31, 33, 127};
                        MemorySegment a = arena.allocate(lay.bytes() + 200);
                        MemorySegment b = arena.allocate(lay.bytes() + 200);
                        for (int trial = 0; trial < 6; trial++) {
                            int off = offsets[trial];
                            float[] x = awkward(rnd, d + off, trial);
                            vec.encode(x, off, x, 0, a, off);
                            sca.encode(x, off, x, 0, b, off);
                            assertEquals(-1L, a.asSlice(off, lay.bytes()).mismatch(b.asSlice(off, lay.bytes())),
                                    lay + " trial " + trial);
                            // Decode parity on the encoded entry and on arbitrary bytes.
                            assertSameDecode(vec, sca, a, off, d);
                            for (long i = 0; i < lay.bytes(); i++) {
                                a.set(java.lang.foreign.ValueLayout.JAVA_BYTE, off + i, (byte) rnd.nextInt());
                            }
                            assertSameDecode(vec, sca, a, off, d);
                        }
                    }
                }
            }
        }
    }

    private static void assertSameDecode(TurboCodec vec, TurboCodec sca, MemorySegment seg, long off, int d) {
        float[] k1 = new float[d + 5];
        float[] k2 = new float[d + 5];
        float[] v1 = new float[d + 9];
        float[] v2 = new float[d + 9];
        vec.decode(seg, off, k1, 5, v1, 9);
        sca.decode(seg, off, k2, 5, v2, 9);
        assertArrayEquals(floatBits(k2), floatBits(k1), "key decode parity");
        assertArrayEquals(floatBits(v2), floatBits(v1), "value decode parity");
        vec.decodeValueRotated(seg, off, v1, 9);
        sca.decodeValueRotated(seg, off, v2, 9);
        assertArrayEquals(floatBits(v2), floatBits(v1), "rotated value decode parity");
    }

    @Test
    void constantKeyGroupDecodesToItsValueInsteadOfNaN() {
        for (KeyQuant kq : KeyQuant.values()) {
            TurboCodec codec = new TurboCodec(new TurboLayout(kq, 3, 64));
            float[] x = new float[64];
            java.util.Arrays.fill(x, 0, 32, 0.75f); // group 0 constant 0.75; group 1 all zeros
            float[] k = roundTripKey(codec, x);
            for (int i = 0; i < 64; i++) {
                assertEquals(x[i], k[i], kq + " element " + i);
            }
        }
    }

    @Test
    void keyGroupWithLargeOffsetAndTinySpreadStaysFiniteAndClose() {
        for (KeyQuant kq : KeyQuant.values()) {
            TurboCodec codec = new TurboCodec(new TurboLayout(kq, 3, 64));
            float[] x = new float[64];
            for (int i = 0; i < 64; i++) {
                x[i] = (i < 32 ? 1000f : -3000f) + (i % 32) * 0.1f; // zero point would overflow fp16
            }
            float[] k = roundTripKey(codec, x);
            for (int i = 0; i < 64; i++) {
                assertTrue(Float.isFinite(k[i]), kq + " finite");
                assertEquals(x[i], k[i], Math.abs(x[i]) / 512, kq + " element " + i);
            }
        }
    }

    @Test
    void neverTurnsFiniteInputIntoNaNOrInfinity() {
        Random rnd = new Random(99);
        float[] wild = {0f, -0f, 1e-30f, Float.MIN_VALUE, 5.9e-8f, 65504f, -65504f, 65520f, 7e4f, -1e6f, 3e38f,
            -Float.MAX_VALUE, 1000f, 1000.0001f};
        for (int d : TurboConstants.HEAD_DIMS) {
            for (KeyQuant kq : KeyQuant.values()) {
                for (int vBits : TurboConstants.V_BITS) {
                    TurboCodec codec = new TurboCodec(new TurboLayout(kq, vBits, d));
                    byte[] entry = new byte[codec.entryBytes()];
                    float[] k = new float[d];
                    float[] v = new float[d];
                    for (int trial = 0; trial < 8; trial++) {
                        float[] x = new float[d];
                        float base = wild[rnd.nextInt(wild.length)];
                        for (int i = 0; i < d; i++) {
                            x[i] = switch (trial % 4) {
                                case 0 -> base;
                                case 1 -> wild[rnd.nextInt(wild.length)];
                                case 2 -> base + (float) rnd.nextGaussian() * Math.ulp(base) * 4;
                                default -> (float) (rnd.nextGaussian() * Math.pow(10, rnd.nextInt(80) - 40));
                            };
                        }
                        codec.encode(x, 0, x, 0, entry, 0);
                        codec.decode(entry, 0, k, 0, v, 0);
                        for (int i = 0; i < d; i++) {
                            assertTrue(Float.isFinite(k[i]), "key " + kq + " d=" + d + " trial " + trial);
                            assertTrue(Float.isFinite(v[i]), "value v" + vBits + " d=" + d + " trial " + trial);
                        }
                    }
                }
            }
        }
    }

    @Test
    void nearFp16MaxValuesDecodeFinite() {
        TurboCodec codec = TurboCodec.of(new KvScheme.Turbo(8, 3), 512);
        float[] x = new float[512];
        java.util.Arrays.fill(x, 60000f); // rotated DC coordinate 60000·√512 overflows fp16
        float[] v = roundTripValue(codec, x);
        for (float f : v) {
            assertTrue(Float.isFinite(f));
        }
    }

    @Test
    void encodeRejectsAnEntryThatDoesNotFit() {
        TurboCodec codec = TurboCodec.of(new KvScheme.Turbo(8, 3), 128);
        float[] x = new float[128];
        assertEquals(200, codec.entryBytes());
        assertThrows(IndexOutOfBoundsException.class, () -> codec.encode(x, 0, x, 0, new byte[199], 0));
        assertThrows(IndexOutOfBoundsException.class, () -> codec.encode(x, 0, x, 0, new byte[400], 201));
    }

    @Test
    void schemeMapsEightBitKeysToSignedQ8AndOthersToUnsigned() {
        assertEquals(KeyQuant.Q8_0, TurboLayout.of(new KvScheme.Turbo(8, 3), 128).keyQuant());
        assertEquals(KeyQuant.Q4_0, TurboLayout.of(new KvScheme.Turbo(4, 2), 128).keyQuant());
        assertEquals(KeyQuant.Q5_0, TurboLayout.of(new KvScheme.Turbo(5, 2), 128).keyQuant());
        assertEquals(KeyQuant.INT2, TurboLayout.of(new KvScheme.Turbo(2, 2), 128).keyQuant());
        assertEquals(KeyQuant.Q4_0, KeyQuant.parse("int4"));
        assertEquals(false, KeyQuant.parse("int2").signed());
    }

    private static float[] roundTripKey(TurboCodec codec, float[] x) {
        byte[] entry = new byte[codec.entryBytes()];
        codec.encode(x, 0, x, 0, entry, 0);
        float[] k = new float[x.length];
        codec.decodeKey(MemorySegment.ofArray(entry), 0, k, 0);
        return k;
    }

    private static float[] roundTripValue(TurboCodec codec, float[] x) {
        byte[] entry = new byte[codec.entryBytes()];
        codec.encode(x, 0, x, 0, entry, 0);
        float[] v = new float[x.length];
        codec.decodeValue(MemorySegment.ofArray(entry), 0, v, 0);
        return v;
    }

    private static double valueMse(int vBits, int d, int vectors, long seed) {
        Random rnd = new Random(seed);
        TurboCodec codec = new TurboCodec(new TurboLayout(KeyQuant.Q8_0, vBits, d));
        double sum = 0;
        for (int n = 0; n < vectors; n++) {
            float[] x = FwhtTest.gaussian(rnd, d);
            float[] v = roundTripValue(codec, x);
            for (int i = 0; i < d; i++) {
                sum += (double) (v[i] - x[i]) * (v[i] - x[i]);
            }
        }
        return sum / ((double) vectors * d);
    }

    private static double keyMse(KeyQuant kq) {
        Random rnd = new Random(13);
        TurboCodec codec = new TurboCodec(new TurboLayout(kq, 3, 128));
        double sum = 0;
        int vectors = 400;
        for (int n = 0; n < vectors; n++) {
            float[] x = FwhtTest.gaussian(rnd, 128);
            for (int i = 0; i < x.length; i++) {
                x[i] = Fp16.round(x[i]);
            }
            float[] k = roundTripKey(codec, x);
            for (int i = 0; i < 128; i++) {
                sum += (double) (k[i] - x[i]) * (k[i] - x[i]);
            }
        }
        return sum / (vectors * 128.0);
    }

    /** Inputs with awkward shapes: Gaussian, constant groups, tiny, huge, mixed magnitudes. */
    private static float[] awkward(Random rnd, int n, int kind) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = switch (kind) {
                case 0 -> (float) rnd.nextGaussian();
                case 1 -> (i / 32) % 2 == 0 ? 0.5f : (float) rnd.nextGaussian();
                case 2 -> (float) rnd.nextGaussian() * 3e-6f;
                case 3 -> 40000f + Math.abs((float) rnd.nextGaussian()) * 8000f;
                case 4 -> (float) (rnd.nextGaussian() * Math.pow(10, rnd.nextInt(12) - 6));
                default -> rnd.nextInt(5) == 0 ? Float.NaN : (float) rnd.nextGaussian() * 1e5f;
            };
        }
        return x;
    }
}
