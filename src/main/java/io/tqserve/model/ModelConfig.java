package io.tqserve.model;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A decoder model's shape from Hugging Face {@code config.json}. Accepts both the older top-level
 * {@code rope_theta} / {@code rope_scaling} / {@code torch_dtype} form and the newer {@code rope_parameters} /
 * {@code dtype} form.
 *
 * @param architecture     which family (decides q/k/v biases and q/k norms)
 * @param dim              hidden size
 * @param hiddenDim        MLP intermediate size
 * @param numLayers        transformer layers
 * @param numHeads         query heads
 * @param numKvHeads       key/value heads (GQA when fewer than numHeads)
 * @param headDim          dimension of one head
 * @param vocabSize        vocabulary size
 * @param maxPositions     max_position_embeddings (context length)
 * @param rmsNormEps       RMSNorm epsilon
 * @param ropeTheta        RoPE base
 * @param ropeScaling      RoPE scaling (NONE when absent)
 * @param tieEmbeddings    lm_head shares the embedding matrix
 * @param dtype            declared weight dtype ("bfloat16", "float16", "float32")
 * @param eosTokenIds      end-of-sequence ids from config.json (generation_config.json may add more)
 * @param bosTokenId       beginning-of-sequence id, or -1
 */
public record ModelConfig(Architecture architecture, int dim, int hiddenDim, int numLayers, int numHeads,
        int numKvHeads, int headDim, int vocabSize, int maxPositions, float rmsNormEps, double ropeTheta,
        RopeScaling ropeScaling, boolean tieEmbeddings, String dtype, List<Integer> eosTokenIds, int bosTokenId) {

    public ModelConfig {
        if (numHeads % numKvHeads != 0) {
            throw new IllegalArgumentException(
                    "num_attention_heads " + numHeads + " is not a multiple of num_key_value_heads " + numKvHeads);
        }
        eosTokenIds = List.copyOf(eosTokenIds);
    }

    /** numKvHeads · headDim. */
    public int kvDim() {
        return numKvHeads * headDim;
    }

    /** numHeads · headDim (the width of q and of the attention output). */
    public int qDim() {
        return numHeads * headDim;
    }

    /** Query heads per KV head. */
    public int groupSize() {
        return numHeads / numKvHeads;
    }

    public static ModelConfig load(Path modelDir) throws IOException {
        Path file = modelDir.resolve("config.json");
        if (!Files.exists(file)) {
            throw new IOException("no config.json in " + modelDir.toAbsolutePath());
        }
        return parse(JsonMapper.shared().readTree(Files.readString(file)));
    }

    public static ModelConfig parse(JsonNode c) {
        List<String> archs = new ArrayList<>();
        c.path("architectures").forEach(a -> archs.add(a.asString()));
        if (archs.isEmpty() && c.has("model_type")) {
            archs.add(switch (c.get("model_type").asString()) {
                case "llama" -> "LlamaForCausalLM";
                case "mistral" -> "MistralForCausalLM";
                case "qwen2" -> "Qwen2ForCausalLM";
                case "qwen3" -> "Qwen3ForCausalLM";
                default -> c.get("model_type").asString();
            });
        }
        Architecture arch = Architecture.fromHf(archs);
        int dim = required(c, "hidden_size");
        int numHeads = required(c, "num_attention_heads");
        int numKvHeads = c.path("num_key_value_heads").isNumber() ? c.get("num_key_value_heads").asInt() : numHeads;
        int headDim = c.path("head_dim").isNumber() ? c.get("head_dim").asInt() : dim / numHeads;

        JsonNode ropeParams = c.path("rope_parameters");
        double theta;
        JsonNode scalingNode;
        if (ropeParams.isObject()) {
            theta = ropeParams.path("rope_theta").asDouble(10000.0);
            scalingNode = ropeParams;
        } else {
            theta = c.path("rope_theta").asDouble(10000.0);
            scalingNode = c.path("rope_scaling");
        }
        RopeScaling scaling = parseScaling(scalingNode);

        String dtype = c.path("dtype").isString() ? c.get("dtype").asString()
                : c.path("torch_dtype").isString() ? c.get("torch_dtype").asString() : "bfloat16";
        List<Integer> eos = new ArrayList<>();
        JsonNode eosNode = c.path("eos_token_id");
        if (eosNode.isArray()) {
            eosNode.forEach(e -> eos.add(e.asInt()));
        } else if (eosNode.isNumber()) {
            eos.add(eosNode.asInt());
        }
        int maxPos = c.path("max_position_embeddings").asInt(2048);
        Integer slidingWindow = c.path("sliding_window").isNumber() ? c.get("sliding_window").asInt() : null;
        boolean useSliding = c.path("use_sliding_window").asBoolean(arch == Architecture.MISTRAL);
        if (slidingWindow != null && useSliding && slidingWindow < maxPos) {
            throw new IllegalArgumentException("sliding-window attention (sliding_window=" + slidingWindow
                    + ") is not supported; serve a model without it or with sliding_window >= max_position_embeddings");
        }
        return new ModelConfig(arch, dim, required(c, "intermediate_size"), required(c, "num_hidden_layers"),
                numHeads, numKvHeads, headDim, required(c, "vocab_size"), maxPos,
                (float) c.path("rms_norm_eps").asDouble(1e-6), theta, scaling,
                c.path("tie_word_embeddings").asBoolean(false), dtype, eos,
                c.path("bos_token_id").isNumber() ? c.get("bos_token_id").asInt() : -1);
    }

    private static RopeScaling parseScaling(JsonNode s) {
        if (s == null || !s.isObject()) {
            return RopeScaling.NONE;
        }
        String type = s.path("rope_type").isString() ? s.get("rope_type").asString()
                : s.path("type").isString() ? s.get("type").asString() : "default";
        return switch (type) {
            case "default" -> RopeScaling.NONE;
            case "linear" -> new RopeScaling("linear", s.path("factor").asDouble(1.0), 1, 1, 0);
            case "llama3" -> new RopeScaling("llama3", s.path("factor").asDouble(8.0),
                    s.path("low_freq_factor").asDouble(1.0), s.path("high_freq_factor").asDouble(4.0),
                    s.path("original_max_position_embeddings").asInt(8192));
            default -> throw new IllegalArgumentException(
                    "unsupported rope scaling type '" + type + "' (supported: default, linear, llama3)");
        };
    }

    private static int required(JsonNode c, String key) {
        JsonNode n = c.get(key);
        if (n == null || !n.isNumber()) {
            throw new IllegalArgumentException("config.json lacks the integer field '" + key + "'");
        }
        return n.asInt();
    }
}
