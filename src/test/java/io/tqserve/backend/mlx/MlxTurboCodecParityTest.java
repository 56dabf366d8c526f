package io.tqserve.backend.mlx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxScope;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The TurboQuant codec in MLX ops against every golden file of goldens/turboquant (the canonical {@code metal}
 * variant): indices, fp16 scales and zeros, packed bytes, and the float32/fp16/bf16 decodes, bit for bit (NaN
 * compared by class).
 */
@Tag("mlx")
class MlxTurboCodecParityTest {
    static final Path GOLDENS = Path.of("goldens/turboquant");
    static Mlx mlx;

    /** Per test, so that each one is reported as skipped, with the places searched, when libmlxc is absent. */
    @BeforeEach
    void requireMlx() {
        mlx = MlxTestLibrary.open();
    }

    static List<Path> goldenFiles() throws IOException {
        try (Stream<Path> s = Files.list(GOLDENS)) {
            return s.filter(p -> p.getFileName().toString().startsWith("tq_d")).sorted().toList();
        }
    }

    @Test
    void encodeAndDecodeEqualTheMetalGoldensBitForBit() throws IOException {
        List<String> mismatches = new ArrayList<>();
        int files = 0;
        int cases = 0;
        long compared = 0;
        for (Path file : goldenFiles()) {
            JsonNode g = JsonMapper.shared().readTree(Files.readString(file));
            MlxTurboCodec codec = codec(g);
            int d = g.get("head_dim").asInt();
            files++;
            for (JsonNode c : g.get("cases")) {
                cases++;
                String where = file.getFileName() + "/" + c.get("name").asString();
                compared += checkCase(codec, d, c, where, mismatches);
            }
        }
        System.out.printf("MLX TurboQuant codec vs metal goldens: %d files, %d cases, %d values compared, %d mismatches%n",
                files, cases, compared, mismatches.size());
        assertTrue(files >= 37, "golden files found: " + files);
        mismatches.forEach(m -> System.out.println("mismatch: " + m));
        assertTrue(mismatches.isEmpty(), mismatches.size() + " mismatches, first: "
                + mismatches.subList(0, Math.min(20, mismatches.size())));
    }

    static MlxTurboCodec codec(JsonNode g) {
        int d = g.get("head_dim").asInt();
        float[] signs = new float[d];
        for (int i = 0; i < d; i++) {
            signs[i] = g.get("fwht_signs").get(i).asInt();
        }
        return new MlxTurboCodec(d, g.get("k_bits").asInt(), g.get("k_signed").asBoolean(), g.get("v_bits").asInt(),
                signs, f32(g.get("v_centroids_f32_hex")), f32(g.get("v_boundaries_metal_f32_hex")));
    }

    /** Compares one case; returns the number of values compared. */
    static long checkCase(MlxTurboCodec codec, int d, JsonNode c, String where, List<String> bad) {
        JsonNode key = c.get("metal").get("key");
        JsonNode value = c.get("metal").get("value");
        long n = 0;
        try (MlxScope s = mlx.newScope()) {
            MlxArray x = input(s, c, d);
            MlxTurboCodec.Keys k = codec.encodeKeys(s, x);
            n += compareInts(where + " key.indices", ints(key.get("indices")), s.toInts(k.indices()), bad);
            n += compareInts(where + " key.scale", ints(key.get("scale_f16_bits")), half(s.toBits16(k.scale())), bad);
            n += compareInts(where + " key.zero", ints(key.get("zero_f16_bits")), half(s.toBits16(k.zero())), bad);
            n += compareHex(where + " key.packed", key.get("packed_hex").asString(), s.toBytes(codec.pack(s, k.indices(),
                    codec.kBits())), bad);
            MlxTurboCodec.Values v = codec.encodeValues(s, x);
            n += compareInts(where + " value.indices", ints(value.get("indices")), s.toInts(v.indices()), bad);
            n += compareInts(where + " value.scale", ints(value.get("scale_f16_bits")), half(s.toBits16(v.scale())), bad);
            n += compareHex(where + " value.packed", value.get("packed_hex").asString(),
                    s.toBytes(codec.pack(s, v.indices(), codec.vBits())), bad);

            // Decode from the golden's own indices and scales (decode checked independently of encode).
            MlxArray kIdx = s.fromInts(ints(key.get("indices")), 0, d, 1, d);
            MlxTurboCodec.Keys gk = new MlxTurboCodec.Keys(kIdx, half(s, key.get("scale_f16_bits")),
                    half(s, key.get("zero_f16_bits")));
            n += compareDecoded(s, where + " key", codec.decodeKeys(s, gk), key, bad);
            MlxArray vIdx = s.fromInts(ints(value.get("indices")), 0, d, 1, d);
            MlxTurboCodec.Values gv = new MlxTurboCodec.Values(vIdx, half(s, value.get("scale_f16_bits")));
            n += compareDecoded(s, where + " value", codec.decodeValues(s, gv), value, bad);
        }
        return n;
    }

    static MlxArray input(MlxScope s, JsonNode c, int d) {
        return switch (c.get("input_dtype").asString()) {
            case "float16" -> s.fromBits16(shorts(c.get("input_bits")), MlxDtype.FLOAT16, 1, d);
            case "bfloat16" -> s.fromBits16(shorts(c.get("input_bits")), MlxDtype.BFLOAT16, 1, d);
            case "float32" -> s.fromFloats(f32(c.get("input_f32_hex")), 1, d);
            default -> throw new IllegalArgumentException(c.get("input_dtype").asString());
        };
    }

    static MlxArray half(MlxScope s, JsonNode bits) {
        short[] b = shorts(bits);
        return s.fromBits16(b, MlxDtype.FLOAT16, 1, b.length);
    }

    static long compareDecoded(MlxScope s, String where, MlxArray decoded, JsonNode golden, List<String> bad) {
        float[] f = s.toFloats(decoded);
        int[] f32bits = new int[f.length];
        for (int i = 0; i < f.length; i++) {
            f32bits[i] = Float.isNaN(f[i]) ? 0x7FC00000 : Float.floatToRawIntBits(f[i]);
        }
        int[] want = new int[f.length];
        for (int i = 0; i < f.length; i++) {
            want[i] = Integer.parseUnsignedInt(golden.get("dequant_f32_hex").get(i).asString().substring(2), 16);
        }
        long n = compareInts(where + ".dequant_f32", want, f32bits, bad);
        n += compareInts(where + ".dequant_f16", ints(golden.get("dequant_f16_bits")),
                canonical(bits(s.toBits16(s.astype(decoded, MlxDtype.FLOAT16))), 0x7E00, 0x7C00), bad);
        n += compareInts(where + ".dequant_bf16", ints(golden.get("dequant_bf16_bits")),
                canonical(bits(s.toBits16(s.astype(decoded, MlxDtype.BFLOAT16))), 0x7FC0, 0x7F80), bad);
        return n;
    }

    /** fp16 bit patterns with NaN canonical (0x7E00), as the goldens write them. */
    static int[] half(short[] bits) {
        return canonical(bits(bits), 0x7E00, 0x7C00);
    }

    /** NaNs of a 16-bit format to its canonical pattern (the goldens write NaN canonically). */
    static int[] canonical(int[] bits, int nan, int inf) {
        for (int i = 0; i < bits.length; i++) {
            if ((bits[i] & 0x7FFF) > inf) {
                bits[i] = nan;
            }
        }
        return bits;
    }

    static long compareInts(String what, int[] want, int[] got, List<String> bad) {
        if (want.length != got.length) {
            bad.add(what + ": length " + got.length + " != " + want.length);
            return 1;
        }
        for (int i = 0; i < want.length; i++) {
            if (want[i] != got[i]) {
                bad.add(what + "[" + i + "]: got " + got[i] + " (0x" + Integer.toHexString(got[i]) + "), want " + want[i]
                        + " (0x" + Integer.toHexString(want[i]) + ")");
            }
        }
        return want.length;
    }

    static long compareHex(String what, String want, byte[] got, List<String> bad) {
        String hex = HexFormat.of().formatHex(got);
        if (!hex.equals(want)) {
            bad.add(what + ": got " + hex + ", want " + want);
        }
        assertEquals(want.length(), hex.length(), what + " packed length");
        return got.length;
    }

    static int[] ints(JsonNode a) {
        int[] out = new int[a.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = a.get(i).asInt();
        }
        return out;
    }

    static short[] shorts(JsonNode a) {
        short[] out = new short[a.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = (short) a.get(i).asInt();
        }
        return out;
    }

    static int[] bits(short[] s) {
        int[] out = new int[s.length];
        for (int i = 0; i < s.length; i++) {
            out[i] = s[i] & 0xFFFF;
        }
        return out;
    }

    static float[] f32(JsonNode hex) {
        float[] out = new float[hex.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = Float.intBitsToFloat(Integer.parseUnsignedInt(hex.get(i).asString().substring(2), 16));
        }
        return out;
    }
}
