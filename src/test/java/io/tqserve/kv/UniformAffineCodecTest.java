package io.tqserve.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Random;
import org.junit.jupiter.api.Test;

class UniformAffineCodecTest {

    @Test
    void int4RampGroupHasMlxScaleBiasAndCodes() {
        // 0..63 (computed by hand with MLX's affine rule): |min| ≤ |max| so the edge is max = 63, scale = −63/15
        // = −4.2 (fp16 0xC433), bias 63 (0x53E0), codes 15,15,15,14,… down to 0.
        UniformAffineCodec codec = new UniformAffineCodec(new KvScheme.Uniform(4), 64);
        float[] x = new float[64];
        for (int i = 0; i < 64; i++) {
            x[i] = i;
        }
        byte[] entry = new byte[codec.entryBytes()];
        codec.encode(x, 0, x, 0, MemorySegment.ofArray(entry), 0);
        assertEquals("ffefeededdcdccbcbbabaaaa9999888877776666555545443433232212110100",
                HexFormat.of().formatHex(Arrays.copyOfRange(entry, 0, 32)));
        assertEquals(0x33, entry[32] & 0xFF);
        assertEquals(0xC4, entry[33] & 0xFF);
        assertEquals(0xE0, entry[34] & 0xFF);
        assertEquals(0x53, entry[35] & 0xFF);
        assertArrayEquals(Arrays.copyOfRange(entry, 0, 36), Arrays.copyOfRange(entry, 36, 72), "V half = K half");
        float[] k = new float[64];
        codec.decodeKey(MemorySegment.ofArray(entry), 0, k, 0);
        assertEquals(0.01171875f, k[0]);
        assertEquals(63f, k[63]);
    }

    @Test
    void roundTripErrorStaysWithinOneStepPlusFp16Rounding() {
        Random rnd = new Random(1);
        for (int bits : new int[] {8, 4}) {
            for (int d : new int[] {64, 128, 256}) {
                UniformAffineCodec codec = new UniformAffineCodec(new KvScheme.Uniform(bits), d);
                byte[] entry = new byte[codec.entryBytes() + 13];
                MemorySegment seg = MemorySegment.ofArray(entry);
                float[] k = new float[d + 3];
                float[] v = new float[d + 3];
                for (int trial = 0; trial < 50; trial++) {
                    float[] x = new float[d + 5];
                    float mag = (float) Math.pow(10, rnd.nextInt(6) - 3);
                    for (int i = 0; i < x.length; i++) {
                        x[i] = (float) rnd.nextGaussian() * mag + (trial % 3 == 0 ? 4 * mag : 0);
                    }
                    codec.encode(x, 5, x, 0, seg, 13);
                    codec.decode(seg, 13, k, 3, v, 3);
                    for (int g = 0; g < d / 64; g++) {
                        float s = Math.abs(codec.scale(seg, 13, g));
                        // Half a step of rounding, up to another step where MLX's scale = edge/q0 pushes the far
                        // extreme past the last code (clamped), and the fp16 rounding of scale and bias
                        // (relative 2^-11, absolute 2^-25 in the subnormal range).
                        float biasErr = Math.abs(codec.bias(seg, 13, g)) * 0x1p-11f + 0x1p-25f;
                        float scaleErr = ((1 << bits) - 1) * (s * 0x1p-11f + 0x1p-25f);
                        for (int i = g * 64; i < g * 64 + 64; i++) {
                            float tol = 1.01f * s + scaleErr + biasErr + Math.ulp(x[5 + i]);
                            assertTrue(Math.abs(k[3 + i] - x[5 + i]) <= tol, "K " + bits + " bits d=" + d + " trial " + trial + " x=" + x[5 + i] + " k=" + k[3 + i] + " s=" + s + " bias=" + codec.bias(seg, 13, g) + " tol=" + tol);
                        }
                    }
                }
            }
        }
    }

    @Test
    void mseOnUnitNormalIsAboutAStepSquaredOverTwelve() {
        for (int bits : new int[] {8, 4}) {
            double[] r = mse(bits); // {measured MSE, mean of ((max−min)/N)²/12 over groups}
            assertEquals(r[1], r[0], 0.15 * r[1], "int" + bits);
        }
    }

    @Test
    void constantZeroAndOutOfRangeGroupsDecodeFinite() {
        UniformAffineCodec codec = new UniformAffineCodec(new KvScheme.Uniform(4), 128);
        float[] x = new float[128];
        Arrays.fill(x, 0, 64, 0.75f);
        byte[] entry = new byte[codec.entryBytes()];
        MemorySegment seg = MemorySegment.ofArray(entry);
        codec.encode(x, 0, x, 0, seg, 0);
        float[] k = new float[128];
        codec.decodeKey(seg, 0, k, 0);
        for (int i = 0; i < 128; i++) {
            assertEquals(x[i], k[i], "constant and zero groups decode to their value");
        }
        Arrays.fill(x, 1e9f);
        x[3] = -3e38f;
        codec.encode(x, 0, x, 0, seg, 0);
        codec.decodeValue(seg, 0, k, 0);
        for (float f : k) {
            assertTrue(Float.isFinite(f));
        }
    }

    @Test
    void bf16CodecRoundsToNearestEven() {
        assertEquals((short) 0x3F80, Bf16Codec.toBf16(1f));
        assertEquals((short) 0x3F80, Bf16Codec.toBf16(Float.intBitsToFloat(0x3F808000))); // tie → even
        assertEquals((short) 0x3F82, Bf16Codec.toBf16(Float.intBitsToFloat(0x3F818000))); // tie → even (up)
        assertEquals((short) 0x7FC0, Bf16Codec.toBf16(Float.NaN));
        Bf16Codec c = new Bf16Codec(7);
        float[] x = {1f, -2.5f, 3.140625f, 0f, -0f, 65504f, 1e-20f};
        byte[] e = new byte[c.entryBytes()];
        c.encode(x, 0, x, 0, MemorySegment.ofArray(e), 0);
        float[] k = new float[7];
        c.decodeValue(MemorySegment.ofArray(e), 0, k, 0);
        for (int i = 0; i < 7; i++) {
            assertEquals(Bf16Codec.fromBf16(Bf16Codec.toBf16(x[i])), k[i]);
        }
    }

    private static double[] mse(int bits) {
        Random rnd = new Random(2);
        UniformAffineCodec codec = new UniformAffineCodec(new KvScheme.Uniform(bits), 128);
        byte[] entry = new byte[codec.entryBytes()];
        MemorySegment seg = MemorySegment.ofArray(entry);
        float[] k = new float[128];
        double sum = 0;
        double model = 0;
        for (int n = 0; n < 400; n++) {
            float[] x = new float[128];
            for (int i = 0; i < 128; i++) {
                x[i] = (float) rnd.nextGaussian();
            }
            for (int g = 0; g < 2; g++) {
                float mn = Float.POSITIVE_INFINITY;
                float mx = Float.NEGATIVE_INFINITY;
                for (int i = 64 * g; i < 64 * g + 64; i++) {
                    mn = Math.min(mn, x[i]);
                    mx = Math.max(mx, x[i]);
                }
                double step = (mx - mn) / ((1 << bits) - 1.0);
                model += 64 * step * step / 12;
            }
            codec.encode(x, 0, x, 0, seg, 0);
            codec.decodeKey(seg, 0, k, 0);
            for (int i = 0; i < 128; i++) {
                sum += (double) (k[i] - x[i]) * (k[i] - x[i]);
            }
        }
        return new double[] {sum / (400 * 128.0), model / (400 * 128.0)};
    }
}
