package io.tqserve.backend.mlx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxScope;
import io.tqserve.kv.turbo.KeyQuant;
import io.tqserve.kv.turbo.TurboCodec;
import io.tqserve.kv.turbo.TurboConstants;
import io.tqserve.kv.turbo.TurboLayout;
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
 * compared by class). Where the reference leaves a group degenerate (the cases with {@code flags}: a zero or
 * non-finite scale or zero point), the MLX codec applies the Java codec's deviation rules: every case's whole
 * entry, and a set of degenerate rows made for it, equal the Java {@code TurboCodec}'s bytes.
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
            TurboLayout lay = new TurboLayout(KeyQuant.parse(g.get("k_quant").asString()), g.get("v_bits").asInt(),
                    g.get("head_dim").asInt());
            files++;
            for (JsonNode c : g.get("cases")) {
                cases++;
                String where = file.getFileName() + "/" + c.get("name").asString();
                compared += checkCase(codec, lay, c, where, mismatches);
            }
        }
        System.out.printf("MLX TurboQuant codec vs metal goldens: %d files, %d cases, %d values compared, %d mismatches%n",
                files, cases, compared, mismatches.size());
        assertTrue(files >= 37, "golden files found: " + files);
        mismatches.forEach(m -> System.out.println("mismatch: " + m));
        assertTrue(mismatches.isEmpty(), mismatches.size() + " mismatches, first: "
                + mismatches.subList(0, Math.min(20, mismatches.size())));
    }

    /**
     * Rows the reference encodes to zero or non-finite scales or zero points, and their neighbours: key groups
     * constant at fp16 precision (zeros, 3.5, −0.001, two values below fp16's smallest subnormal), ranges and sums
     * beyond fp16 (±60000, 70000 … 10^6, 60000 … 60016), zero points beyond fp16 (30000 … 30001 unsigned), inputs
     * near float32's limit (10^30, −10^38), values whose rotated coordinates pass 65504 (a mean of 10^5), an
     * all-zero value row, and an ordinary row. Each encodes, for every key quantizer and several value widths, to
     * exactly the Java codec's entry.
     */
    @Test
    void degenerateRowsEncodeAsTheJavaCodecBitForBit() {
        List<String> mismatches = new ArrayList<>();
        int rows = 0;
        for (int d : new int[] {64, 128}) {
            List<float[]> inputs = degenerateRows(d);
            for (KeyQuant kq : KeyQuant.values()) {
                for (int vBits : new int[] {2, 3, 5, 8}) {
                    TurboLayout lay = new TurboLayout(kq, vBits, d);
                    MlxTurboCodec codec = new MlxTurboCodec(d, kq.bits(), kq.signed(), vBits, TurboConstants.signs(d),
                            TurboConstants.centroids(vBits), TurboConstants.boundaries(vBits));
                    try (MlxScope s = mlx.newScope()) {
                        for (int r = 0; r < inputs.size(); r++) {
                            float[] x = inputs.get(r);
                            compareHex(kq.names().get(0) + " v" + vBits + " d" + d + " row " + r,
                                    HexFormat.of().formatHex(javaEntry(lay, x)), mlxEntry(s, codec, lay,
                                            s.fromFloats(x, 1, d)), mismatches);
                            rows++;
                        }
                    }
                }
            }
        }
        mismatches.forEach(m -> System.out.println("mismatch: " + m));
        assertTrue(rows >= 100, "rows compared: " + rows);
        assertTrue(mismatches.isEmpty(), mismatches.size() + " of " + rows + " rows differ, first: "
                + mismatches.subList(0, Math.min(5, mismatches.size())));
    }

    static List<float[]> degenerateRows(int d) {
        java.util.Random rnd = new java.util.Random(16);
        float[][] groups = {
            fill(0f, 0f), fill(3.5f, 3.5f), fill(-1e-3f, -1e-3f), fill(1e-8f, 1.1e-8f),
            fill(-60000f, 60000f), fill(70000f, 1e6f), fill(60000f, 60016f), fill(30000f, 30001f),
            fill(1e30f, 2e30f), fill(-1e38f, -1e37f), fill(1e5f, 1e5f), fill(-65504f, 65504f)};
        List<float[]> rows = new ArrayList<>();
        int perRow = d / GROUP_SIZE;
        for (int start = 0; start < groups.length; start += perRow - 1) { // every row also has a normal group
            float[] row = new float[d];
            for (int g = 0; g < perRow; g++) {
                float[] src = g < perRow - 1 && start + g < groups.length ? groups[start + g] : normal(rnd);
                System.arraycopy(src, 0, row, g * GROUP_SIZE, GROUP_SIZE);
            }
            rows.add(row);
        }
        float[] big = new float[d];
        java.util.Arrays.fill(big, 1e5f); // every rotated value beyond fp16 (the mean lands in one coordinate)
        rows.add(big);
        rows.add(new float[d]);
        float[] ordinary = new float[d];
        for (int i = 0; i < d; i++) {
            ordinary[i] = (float) rnd.nextGaussian();
        }
        rows.add(ordinary);
        return rows;
    }

    static final int GROUP_SIZE = MlxTurboCodec.GROUP;

    /** A group from lo to hi in equal steps (constant when lo == hi), in a shuffled order. */
    static float[] fill(float lo, float hi) {
        float[] g = new float[GROUP_SIZE];
        for (int i = 0; i < GROUP_SIZE; i++) {
            g[(i * 7) % GROUP_SIZE] = lo + (hi - lo) * i / (GROUP_SIZE - 1);
        }
        return g;
    }

    static float[] normal(java.util.Random rnd) {
        float[] g = new float[GROUP_SIZE];
        for (int i = 0; i < GROUP_SIZE; i++) {
            g[i] = (float) rnd.nextGaussian();
        }
        return g;
    }

    /** The Java codec's entry for x as both K and V. */
    static byte[] javaEntry(TurboLayout lay, float[] x) {
        byte[] e = new byte[lay.bytes()];
        new TurboCodec(lay).encode(x, 0, x, 0, e, 0);
        return e;
    }

    /** The MLX codec's entry for the row x (1, headDim) as both K and V, in the entry layout. */
    static byte[] mlxEntry(MlxScope s, MlxTurboCodec codec, TurboLayout lay, MlxArray x) {
        MlxTurboCodec.Keys k = codec.encodeKeys(s, x);
        MlxTurboCodec.Values v = codec.encodeValues(s, x);
        byte[] e = new byte[lay.bytes()];
        put(e, lay.keyCodesOffset(), s.toBytes(codec.pack(s, k.indices(), codec.kBits())));
        put(e, lay.keyScalesOffset(), littleEndian(s.toBits16(k.scale())));
        put(e, lay.keyZerosOffset(), littleEndian(s.toBits16(k.zero())));
        put(e, lay.valueCodesOffset(), s.toBytes(codec.pack(s, v.indices(), codec.vBits())));
        put(e, lay.valueScalesOffset(), littleEndian(s.toBits16(v.scale())));
        return e;
    }

    static void put(byte[] dst, int off, byte[] src) {
        System.arraycopy(src, 0, dst, off, src.length);
    }

    static byte[] littleEndian(short[] h) {
        byte[] out = new byte[2 * h.length];
        for (int i = 0; i < h.length; i++) {
            out[2 * i] = (byte) h[i];
            out[2 * i + 1] = (byte) (h[i] >> 8);
        }
        return out;
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
    static long checkCase(MlxTurboCodec codec, TurboLayout lay, JsonNode c, String where, List<String> bad) {
        int d = lay.headDim();
        JsonNode metal = c.get("metal");
        JsonNode key = metal.get("key");
        JsonNode value = metal.get("value");
        boolean keyFlagged = false;
        boolean valueFlagged = false;
        for (JsonNode f : metal.get("flags")) {
            keyFlagged |= f.asString().startsWith("key_");
            valueFlagged |= f.asString().startsWith("value_");
        }
        long n = 0;
        try (MlxScope s = mlx.newScope()) {
            MlxArray x = input(s, c, d);
            n += compareHex(where + " entry vs the Java codec", HexFormat.of().formatHex(javaEntry(lay,
                    f32(c.get("input_f32_hex")))), mlxEntry(s, codec, lay, x), bad);
            MlxTurboCodec.Keys k = codec.encodeKeys(s, x);
            if (!keyFlagged) { // flagged: the deviation rules, checked against the Java codec above
                n += compareInts(where + " key.indices", ints(key.get("indices")), s.toInts(k.indices()), bad);
                n += compareInts(where + " key.scale", ints(key.get("scale_f16_bits")), half(s.toBits16(k.scale())), bad);
                n += compareInts(where + " key.zero", ints(key.get("zero_f16_bits")), half(s.toBits16(k.zero())), bad);
                n += compareHex(where + " key.packed", key.get("packed_hex").asString(), s.toBytes(codec.pack(s,
                        k.indices(), codec.kBits())), bad);
            }
            MlxTurboCodec.Values v = codec.encodeValues(s, x);
            if (!valueFlagged) {
                n += compareInts(where + " value.indices", ints(value.get("indices")), s.toInts(v.indices()), bad);
                n += compareInts(where + " value.scale", ints(value.get("scale_f16_bits")), half(s.toBits16(v.scale())),
                        bad);
                n += compareHex(where + " value.packed", value.get("packed_hex").asString(),
                        s.toBytes(codec.pack(s, v.indices(), codec.vBits())), bad);
            }

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
