package io.tqserve.model;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code generation_config.json}: end-of-sequence ids (one id or a list) and default sampling values.
 *
 * @param eosTokenIds  every id that ends a sequence (config.json's and generation_config.json's together)
 * @param temperature  default temperature, or null
 * @param topP         default top_p, or null
 * @param topK         default top_k, or null
 * @param repetitionPenalty default repetition penalty, or null
 */
public record GenerationConfig(Set<Integer> eosTokenIds, Float temperature, Float topP, Integer topK,
        Float repetitionPenalty) {

    public GenerationConfig {
        eosTokenIds = Set.copyOf(eosTokenIds);
    }

    public static GenerationConfig load(Path modelDir, List<Integer> configEos) throws IOException {
        Set<Integer> eos = new LinkedHashSet<>(configEos);
        Path file = modelDir.resolve("generation_config.json");
        if (!Files.exists(file)) {
            return new GenerationConfig(eos, null, null, null, null);
        }
        JsonNode g = JsonMapper.shared().readTree(Files.readString(file));
        JsonNode e = g.path("eos_token_id");
        if (e.isArray()) {
            e.forEach(x -> eos.add(x.asInt()));
        } else if (e.isNumber()) {
            eos.add(e.asInt());
        }
        boolean sample = g.path("do_sample").asBoolean(true);
        return new GenerationConfig(eos,
                sample && g.path("temperature").isNumber() ? (float) g.get("temperature").asDouble() : null,
                sample && g.path("top_p").isNumber() ? (float) g.get("top_p").asDouble() : null,
                sample && g.path("top_k").isNumber() ? g.get("top_k").asInt() : null,
                g.path("repetition_penalty").isNumber() ? (float) g.get("repetition_penalty").asDouble() : null);
    }
}
