package io.tqserve.model;

import io.tqserve.backend.GroupQuant;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The {@code quantization} block of an MLX model's {@code config.json} (or its {@code quantization_config} twin,
 * which mlx-lm writes with the same content): default {@code bits}, {@code group_size} and {@code mode}, plus
 * per-module entries keyed by module path ({@code "model.layers.0.mlp.down_proj"}) holding either their own
 * parameters or {@code false} (left dense). A module is quantized, as mlx-lm decides it, when it has an entry
 * with parameters, or when it has no entry and its {@code scales} tensor exists. Only mode {@code affine} is
 * supported; other modes (mxfp4, nvfp4, mxfp8) and other methods (AWQ, GPTQ, bitnet: {@code quant_method}) are
 * refused by name.
 *
 * @param defaults  the block's own parameters, or null when the model is not quantized
 * @param overrides per-module parameters; a null value means "not quantized"
 */
public record QuantizationConfig(Params defaults, Map<String, Params> overrides) {
    /** Not quantized. */
    public static final QuantizationConfig NONE = new QuantizationConfig(null, Map.of());

    /** One module's quantization parameters as written (validated when a module uses them). */
    public record Params(int bits, int groupSize, String mode) {
        /** Refuses an unsupported mode, width or group size with a message naming the module and the value. */
        public Params validateFor(String module) {
            if (!"affine".equals(mode)) {
                throw new IllegalArgumentException(module + ": quantization mode '" + mode
                        + "' is not supported (supported: affine)");
            }
            if (!GroupQuant.supportedBits(bits)) {
                throw new IllegalArgumentException(module + ": quantization bits " + bits
                        + " is not supported (supported: 2, 3, 4, 5, 6, 8)");
            }
            if (!GroupQuant.supportedGroupSize(groupSize)) {
                throw new IllegalArgumentException(module + ": quantization group_size " + groupSize
                        + " is not supported (supported: 32, 64, 128)");
            }
            return this;
        }
    }

    public QuantizationConfig {
        overrides = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(overrides));
    }

    public boolean quantized() {
        return defaults != null;
    }

    public static QuantizationConfig load(Path modelDir) throws IOException {
        return parse(JsonMapper.shared().readTree(Files.readString(modelDir.resolve("config.json"))));
    }

    public static QuantizationConfig parse(JsonNode config) {
        JsonNode q = config.path("quantization");
        if (!q.isObject()) {
            q = config.path("quantization_config");
        }
        if (!q.isObject()) {
            return NONE;
        }
        if (q.has("quant_method") && !q.has("bits")) {
            throw new IllegalArgumentException("config.json quantization_config.quant_method '"
                    + q.path("quant_method").asString() + "' is not supported (tqserve loads MLX affine quantization: "
                    + "a 'quantization' block with bits and group_size)");
        }
        Params defaults = params(q, null, "config.json quantization");
        Map<String, Params> overrides = new LinkedHashMap<>();
        for (var e : q.properties()) {
            JsonNode v = e.getValue();
            if (v.isObject()) {
                overrides.put(e.getKey(), params(v, defaults, e.getKey()));
            } else if (v.isBoolean()) {
                overrides.put(e.getKey(), v.asBoolean() ? defaults : null);
            }
        }
        return new QuantizationConfig(defaults, overrides);
    }

    private static Params params(JsonNode n, Params inherit, String where) {
        int bits = n.path("bits").isNumber() ? n.get("bits").asInt() : inherit != null ? inherit.bits() : -1;
        int gs = n.path("group_size").isNumber() ? n.get("group_size").asInt()
                : inherit != null ? inherit.groupSize() : -1;
        String mode = n.path("mode").isString() ? n.get("mode").asString() : inherit != null ? inherit.mode() : "affine";
        if (bits < 0 || gs < 0) {
            throw new IllegalArgumentException(where + " lacks " + (bits < 0 ? "bits" : "group_size"));
        }
        return new Params(bits, gs, mode);
    }

    /**
     * The parameters module {@code path} is stored with, or null when it is dense: its own entry if it has one,
     * else the defaults when its scales were written.
     */
    public Params forModule(String path, boolean hasScales) {
        if (overrides.containsKey(path)) {
            Params p = overrides.get(path);
            return p == null ? null : p.validateFor(path);
        }
        return defaults != null && hasScales ? defaults.validateFor(path) : null;
    }

    /** "affine 4-bit, group size 64" (plus the number of per-module entries), or "not quantized". */
    public String describe() {
        if (defaults == null) {
            return "not quantized";
        }
        long special = overrides.size();
        return defaults.mode() + " " + defaults.bits() + "-bit, group size " + defaults.groupSize()
                + (special > 0 ? " (" + special + " per-module entries)" : "");
    }
}
