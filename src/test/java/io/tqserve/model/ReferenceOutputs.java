package io.tqserve.model;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** PyTorch reference outputs of a model folder ({@code reference_outputs.json}). */
record ReferenceOutputs(List<Prompt> prompts) {

    record Prompt(String text, int[] inputIds, float[] lastLogits, float[] promptTokenNll, int[] greedy32,
            String greedy32Text) {
    }

    static ReferenceOutputs load(Path modelDir) throws IOException {
        JsonNode root = JsonMapper.shared().readTree(Files.readString(modelDir.resolve("reference_outputs.json")));
        List<Prompt> prompts = new ArrayList<>();
        for (JsonNode p : root.path("prompts")) {
            prompts.add(new Prompt(p.path("text").isString() ? p.get("text").asString() : null, ints(p.path("input_ids")),
                    floats(p.path("last_logits")), floats(p.path("prompt_token_nll")), ints(p.path("greedy_32")),
                    p.path("greedy_32_text").isString() ? p.get("greedy_32_text").asString() : null));
        }
        return new ReferenceOutputs(prompts);
    }

    private static int[] ints(JsonNode a) {
        int[] out = new int[a.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = a.get(i).asInt();
        }
        return out;
    }

    private static float[] floats(JsonNode a) {
        float[] out = new float[a.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = (float) a.get(i).asDouble();
        }
        return out;
    }
}
