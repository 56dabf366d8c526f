package io.tqserve.kv.turbo;

import static io.tqserve.kv.turbo.GoldenFiles.bytes;
import static io.tqserve.kv.turbo.GoldenFiles.f32;
import static io.tqserve.kv.turbo.GoldenFiles.f32Bits;
import static io.tqserve.kv.turbo.GoldenFiles.ints;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.tqserve.kv.KvLayout;
import io.tqserve.kv.KvScheme;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import tools.jackson.databind.JsonNode;

/**
 * Every file and every case listed in goldens/turboquant/index.json, against the canonical {@code metal} block:
 * key and value codes, fp16 scale/zero bit patterns, packed bytes and float32 decodes, bit for bit. Groups the
 * reference leaves degenerate (the cases whose {@code flags} are non-empty) are checked against the deviation rules
 * of {@link KeyCodec} and {@link ValueCodec} instead. The vector and scalar codecs must write identical bytes.
 */
class TurboGoldenTest {
    private static final int GROUP = 32;

    @Test
    void indexListsAtLeastOneFileForEveryHeadDim() {
        List<JsonNode> files = GoldenFiles.index();
        for (int d : TurboConstants.HEAD_DIMS) {
            assertTrue(files.stream().anyMatch(f -> f.get("head_dim").asInt() == d), "no golden file for d=" + d);
        }
    }

    @TestFactory
    Stream<DynamicNode> everyIndexedCaseMatchesMetalEncoderBitForBit() {
        return GoldenFiles.index().stream().map(entry -> {
            String name = entry.get("file").asString();
            JsonNode file = GoldenFiles.read(name);
            List<DynamicNode> tests = new ArrayList<>();
            tests.add(DynamicTest.dynamicTest("header", () -> checkHeader(entry, file)));
            for (JsonNode caseName : entry.get("cases")) {
                String cn = caseName.asString();
                tests.add(DynamicTest.dynamicTest(cn, () -> checkCase(file, findCase(file, cn))));
            }
            return DynamicContainer.dynamicContainer(name, tests);
        });
    }

    private static JsonNode findCase(JsonNode file, String name) {
        for (JsonNode c : file.get("cases")) {
            if (c.get("name").asString().equals(name)) {
                return c;
            }
        }
        return fail("case " + name + " listed in index.json is missing from the file");
    }

    private static TurboLayout layout(JsonNode file) {
        KeyQuant kq = KeyQuant.parse(file.get("k_quant").asString());
        assertEquals(file.get("k_bits").asInt(), kq.bits());
        assertEquals(file.get("k_signed").asBoolean(), kq.signed());
        for (JsonNode alias : file.get("k_quant_aliases")) {
            assertEquals(kq, KeyQuant.parse(alias.asString()));
        }
        return new TurboLayout(kq, file.get("v_bits").asInt(), file.get("head_dim").asInt());
    }

    private static void checkHeader(JsonNode entry, JsonNode file) {
        assertEquals("turboquant-golden/1", file.get("schema").asString());
        assertEquals(entry.get("head_dim").asInt(), file.get("head_dim").asInt());
        assertEquals(GROUP, file.get("group_size").asInt());
        TurboLayout lay = layout(file);
        int d = lay.headDim();
        JsonNode b = file.get("bytes_per_token_per_head");
        assertEquals(b.get("k_indices").asInt(), lay.keyCodeBytes());
        assertEquals(b.get("k_scale").asInt(), lay.keyZerosOffset() - lay.keyScalesOffset());
        assertEquals(b.get("k_zero").asInt(), lay.valueCodesOffset() - lay.keyZerosOffset());
        assertEquals(b.get("v_indices").asInt(), lay.valueCodeBytes());
        assertEquals(b.get("v_scale").asInt(), lay.bytes() - lay.valueScalesOffset());
        assertEquals(b.get("total").asInt(), lay.bytes());
        assertEquals(b.get("bf16_kv").asInt(), KvLayout.bytesPerTokenPerHead(KvScheme.BF16, d));
        assertEquals(b.get("ratio_vs_bf16").asDouble(), lay.ratioVsBf16(), 1e-12);
        // KvLayout covers the scheme's key width (8-bit schemes are signed; uint8 has the same size).
        KvScheme.Turbo scheme = new KvScheme.Turbo(lay.kBits(), lay.vBits());
        assertEquals(b.get("total").asInt(), KvLayout.bytesPerTokenPerHead(scheme, d));
        assertEquals(b.get("ratio_vs_bf16").asDouble(), KvLayout.of(scheme, 1, 1, d).compressionRatio(), 1e-12);

        int[] signs = ints(file.get("fwht_signs"));
        float[] ours = TurboConstants.signs(d);
        for (int i = 0; i < d; i++) {
            assertEquals(signs[i], (int) ours[i], "sign " + i);
        }
        assertArrayEquals(hexBits(file.get("v_centroids_f32_hex")), floatBits(TurboConstants.centroids(lay.vBits())));
        assertArrayEquals(hexBits(file.get("v_boundaries_metal_f32_hex")),
                floatBits(TurboConstants.boundaries(lay.vBits())));
    }

    private static void checkCase(JsonNode file, JsonNode c) {
        TurboLayout lay = layout(file);
        float[] x = f32(c.get("input_f32_hex"));
        assertEquals(lay.headDim(), x.length);
        TurboCodec codec = new TurboCodec(lay, TurboParity.VEC);
        TurboCodec scalar = new TurboCodec(lay, TurboParity.SCA);
        byte[] entry = new byte[lay.bytes()];
        byte[] entryScalar = new byte[lay.bytes()];
        codec.encode(x, 0, x, 0, entry, 0);
        scalar.encode(x, 0, x, 0, entryScalar, 0);
        assertArrayEquals(entryScalar, entry, "vector and scalar encoders differ");

        JsonNode metal = c.get("metal");
        List<String> flags = GoldenFiles.strings(metal.get("flags"));
        boolean keyFlagged = flags.stream().anyMatch(f -> f.startsWith("key_"));
        boolean valueFlagged = flags.stream().anyMatch(f -> f.startsWith("value_"));
        MemorySegment seg = MemorySegment.ofArray(entry);
        checkKey(lay, codec, scalar, seg, entry, x, metal.get("key"), keyFlagged);
        checkValue(lay, codec, scalar, seg, entry, x, metal.get("value"), valueFlagged);
    }

    private static void checkKey(TurboLayout lay, TurboCodec codec, TurboCodec scalar, MemorySegment seg, byte[] entry,
            float[] x, JsonNode key, boolean flagged) {
        int d = lay.headDim();
        KeyQuant q = lay.keyQuant();
        int[] goldIdx = ints(key.get("indices"));
        int[] goldScale = ints(key.get("scale_f16_bits"));
        int[] goldZero = ints(key.get("zero_f16_bits"));
        byte[] goldPacked = bytes(key.get("packed_hex"));
        int[] goldDeq = hexBits(key.get("dequant_f32_hex"));
        assertEquals(lay.keyCodeBytes(), goldPacked.length);

        int[] codes = new int[d];
        codec.keyCodes(seg, 0, codes, 0);
        float[] deq = new float[d];
        float[] deqScalar = new float[d];
        codec.decodeKey(seg, 0, deq, 0);
        scalar.decodeKey(seg, 0, deqScalar, 0);
        assertArrayEquals(floatBits(deqScalar), floatBits(deq), "vector and scalar key decode differ");
        if (!flagged) {
            assertArrayEquals(goldPacked, Arrays.copyOfRange(entry, 0, lay.keyCodeBytes()), "packed K codes");
        }
        int groupBytes = GROUP * q.bits() / 8;
        for (int g = 0; g < lay.groups(); g++) {
            float gs = Float.float16ToFloat((short) goldScale[g]);
            float gz = Float.float16ToFloat((short) goldZero[g]);
            boolean degenerate = gs == 0f || !Float.isFinite(gs) || !Float.isFinite(gz);
            int from = g * GROUP;
            if (!degenerate) {
                assertEquals(goldScale[g], codec.keyScaleBits(seg, 0, g), "K scale bits, group " + g);
                assertEquals(goldZero[g], codec.keyZeroBits(seg, 0, g), "K zero bits, group " + g);
                assertArrayEquals(Arrays.copyOfRange(goldIdx, from, from + GROUP),
                        Arrays.copyOfRange(codes, from, from + GROUP), "K codes, group " + g);
                assertArrayEquals(Arrays.copyOfRange(goldPacked, g * groupBytes, (g + 1) * groupBytes),
                        Arrays.copyOfRange(entry, g * groupBytes, (g + 1) * groupBytes), "packed K, group " + g);
                for (int i = from; i < from + GROUP; i++) {
                    assertSameF32(goldDeq[i], deq[i], "K dequant " + i);
                }
            } else {
                assertTrue(flagged, "group " + g + " is degenerate in an unflagged case");
                checkKeyDeviation(lay, codec, seg, x, codes, deq, g);
            }
        }
    }

    /** The deviation rule of {@link KeyCodec} for one group the reference leaves with a zero/non-finite scale or zero. */
    private static void checkKeyDeviation(TurboLayout lay, TurboCodec codec, MemorySegment seg, float[] x, int[] codes,
            float[] deq, int g) {
        KeyQuant q = lay.keyQuant();
        int from = g * GROUP;
        float mn = Float.POSITIVE_INFINITY;
        float mx = Float.NEGATIVE_INFINITY;
        for (int i = from; i < from + GROUP; i++) {
            mn = Math.min(mn, x[i]);
            mx = Math.max(mx, x[i]);
        }
        float mnh = Fp16.roundSaturating(mn);
        float mxh = Fp16.roundSaturating(mx);
        float s = codec.keyScale(seg, 0, g);
        float z = codec.keyZero(seg, 0, g);
        assertTrue(Float.isFinite(s) && s > 0f, "deviation scale " + s);
        assertTrue(Float.isFinite(z), "deviation zero " + z);
        if (mnh == mxh) {
            assertEquals(1f, s, "constant group: scale 1");
            assertEquals(mnh, z, "constant group: zero = its value");
            for (int i = from; i < from + GROUP; i++) {
                assertEquals(0, codes[i], "constant group: code 0");
                assertEquals(mnh, deq[i], "constant group decodes to its value");
            }
            return;
        }
        float r = q.signed() ? 254f : q.maxCode();
        float expected = Fp16.roundUp(Math.max((mxh - mnh) / r, Math.max(Math.abs(mnh), Math.abs(mxh)) / 1024f));
        assertEquals(expected, s, "rescaled group scale");
        assertTrue(Math.abs(z) <= 1024f && z == Math.rint(z), "rescaled zero " + z);
        for (int i = from; i < from + GROUP; i++) {
            float h = Fp16.roundSaturating(x[i]);
            assertTrue(Float.isFinite(deq[i]), "finite decode");
            assertTrue(Math.abs(deq[i] - h) <= 0.5f * s * 1.001f + Math.ulp(h), "within s/2: " + deq[i] + " vs " + h);
        }
    }

    private static void checkValue(TurboLayout lay, TurboCodec codec, TurboCodec scalar, MemorySegment seg,
            byte[] entry, float[] x, JsonNode value, boolean flagged) {
        int d = lay.headDim();
        int[] goldIdx = ints(value.get("indices"));
        int[] goldScale = ints(value.get("scale_f16_bits"));
        byte[] goldPacked = bytes(value.get("packed_hex"));
        int[] goldDeq = hexBits(value.get("dequant_f32_hex"));
        int[] goldRot = hexBits(value.get("debug").get("rotated_f32_hex"));
        assertEquals(lay.valueCodeBytes(), goldPacked.length);

        float[] rot = x.clone();
        TurboParity.VEC.rotate(rot, 0, d, TurboConstants.signsShared(d));
        assertArrayEquals(goldRot, floatBits(rot), "FWHT(v ⊙ σ), vector");
        rot = x.clone();
        TurboParity.SCA.rotate(rot, 0, d, TurboConstants.signsShared(d));
        assertArrayEquals(goldRot, floatBits(rot), "FWHT(v ⊙ σ), scalar");

        int[] codes = new int[d];
        codec.valueCodes(seg, 0, codes, 0);
        float[] deq = new float[d];
        float[] deqScalar = new float[d];
        codec.decodeValue(seg, 0, deq, 0);
        scalar.decodeValue(seg, 0, deqScalar, 0);
        assertArrayEquals(floatBits(deqScalar), floatBits(deq), "vector and scalar value decode differ");
        float[] deferred = new float[d];
        codec.decodeValueRotated(seg, 0, deferred, 0);
        codec.unrotate(deferred, 0);
        assertArrayEquals(floatBits(deq), floatBits(deferred), "rotated decode then unrotate = direct decode");

        int vOff = lay.valueCodesOffset();
        if (!flagged) {
            assertArrayEquals(goldPacked, Arrays.copyOfRange(entry, vOff, vOff + lay.valueCodeBytes()), "packed V codes");
            assertArrayEquals(goldIdx, codes, "V codes");
            for (int g = 0; g < lay.groups(); g++) {
                assertEquals(goldScale[g], codec.valueScaleBits(seg, 0, g), "V scale bits, group " + g);
            }
            for (int i = 0; i < d; i++) {
                assertSameF32(goldDeq[i], deq[i], "V dequant " + i);
            }
            return;
        }
        float[] bnd = TurboConstants.boundaries(lay.vBits());
        for (int g = 0; g < lay.groups(); g++) {
            int from = g * GROUP;
            float gs = Float.float16ToFloat((short) goldScale[g]);
            if (Float.isFinite(gs)) {
                assertEquals(goldScale[g], codec.valueScaleBits(seg, 0, g), "V scale bits, group " + g);
                assertArrayEquals(Arrays.copyOfRange(goldIdx, from, from + GROUP),
                        Arrays.copyOfRange(codes, from, from + GROUP), "V codes, group " + g);
                continue;
            }
            // Deviation: y_h saturates at ±65504 instead of overflowing to ±inf.
            float sumSq = 0f;
            float[] yh = new float[GROUP];
            for (int i = 0; i < GROUP; i++) {
                yh[i] = Fp16.roundSaturating(Float.intBitsToFloat(goldRot[from + i]));
                sumSq += yh[i] * yh[i];
            }
            float s = Fp16.round((float) Math.sqrt(sumSq * 0.03125f));
            assertTrue(Float.isFinite(s));
            assertEquals(s, codec.valueScale(seg, 0, g), "saturated V scale, group " + g);
            for (int i = 0; i < GROUP; i++) {
                float norm = Fp16.round(yh[i] / s);
                int below = 0;
                for (float b : bnd) {
                    below += norm > b ? 1 : 0;
                }
                assertEquals(below, codes[from + i], "saturated V code");
            }
        }
        for (float v : deq) {
            assertTrue(Float.isFinite(v), "deviation: V decodes finite");
        }
        assertFalse(Float.isNaN(deq[0]));
    }

    private static void assertSameF32(int expectedBits, float actual, String what) {
        float e = Float.intBitsToFloat(expectedBits);
        if (Float.isNaN(e)) {
            assertTrue(Float.isNaN(actual), what + ": expected NaN, got " + actual);
        } else {
            assertEquals(expectedBits, Float.floatToRawIntBits(actual), what + ": expected " + e + ", got " + actual);
        }
    }

    static int[] hexBits(JsonNode hexArray) {
        int[] out = new int[hexArray.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = f32Bits(hexArray.get(i));
        }
        return out;
    }

    static int[] floatBits(float[] f) {
        int[] out = new int[f.length];
        for (int i = 0; i < f.length; i++) {
            out[i] = Float.isNaN(f[i]) ? 0x7FC00000 : Float.floatToRawIntBits(f[i]);
        }
        return out;
    }
}
