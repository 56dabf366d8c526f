package io.tqserve.kv.turbo;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** Reads goldens/turboquant (schema turboquant-golden/1, see README there). */
final class GoldenFiles {
    static final Path DIR = Path.of("goldens", "turboquant");
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private GoldenFiles() {
    }

    static JsonNode read(String name) {
        return JSON.readTree(DIR.resolve(name));
    }

    /** The files listed in index.json, in order. */
    static List<JsonNode> index() {
        List<JsonNode> out = new ArrayList<>();
        for (JsonNode f : read("index.json").get("files")) {
            out.add(f);
        }
        return out;
    }

    static float[] f32(JsonNode hexArray) {
        float[] out = new float[hexArray.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = Float.intBitsToFloat(f32Bits(hexArray.get(i)));
        }
        return out;
    }

    static int f32Bits(JsonNode hex) {
        return Integer.parseUnsignedInt(hex.asString().substring(2), 16);
    }

    static int[] ints(JsonNode array) {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).asInt();
        }
        return out;
    }

    static byte[] bytes(JsonNode hex) {
        return HexFormat.of().parseHex(hex.asString());
    }

    static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        for (JsonNode n : array) {
            out.add(n.asString());
        }
        return out;
    }
}
