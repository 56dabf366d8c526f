package io.tqserve.api;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * The embedded model served with another chat template and with tool-call markers as single tokens, as the real
 * tokenizers of those formats have them (Qwen2.5's {@code <tool_call>}, Mistral's special {@code [TOOL_CALLS]} and
 * {@code [ARGS]}): the embedded tokenizer has no such tokens and its vocabulary is full, so each marker takes the id
 * of one of the last-learned BPE tokens (one that no merge builds on), whose merge is dropped. The model's weights
 * are unchanged, so a marker token is as likely as the piece it replaced; tests raise it with {@code logit_bias}.
 */
final class MarkerTokenModel {
    static final JsonMapper JSON = JsonMapper.builder().build();
    /** Ids of last-learned pieces ("ĠPres", "verage", "ustr") that no merge builds on. */
    static final int HERMES_CALL = 8191;
    static final int TOOL_CALLS = 8190;
    static final int ARGS = 8189;

    private MarkerTokenModel() {
    }

    /**
     * A model folder: the embedded model's files linked, its tokenizer with {@code markers} (id to text; special or
     * not) and, unless null, {@code template} as its chat template.
     */
    static Path create(String template, Map<Integer, Map.Entry<String, Boolean>> markers) throws Exception {
        Path dir = Files.createTempDirectory("tqserve-marker-tokens");
        Path src = Path.of("models/tiny-llama-h128").toAbsolutePath();
        try (var files = Files.list(src)) {
            for (Path f : files.toList()) {
                String name = f.getFileName().toString();
                Path to = dir.resolve(name);
                if (name.equals("tokenizer_config.json") && template != null) {
                    ObjectNode cfg = (ObjectNode) JSON.readTree(f.toFile());
                    cfg.put("chat_template", template);
                    Files.writeString(to, cfg.toString());
                } else if (name.equals("tokenizer.json")) {
                    Files.writeString(to, withMarkers((ObjectNode) JSON.readTree(f.toFile()), markers).toString());
                } else {
                    Files.createSymbolicLink(to, f);
                }
            }
        }
        return dir;
    }

    private static ObjectNode withMarkers(ObjectNode tokenizer, Map<Integer, Map.Entry<String, Boolean>> markers) {
        ObjectNode vocab = (ObjectNode) tokenizer.get("model").get("vocab");
        ArrayNode merges = (ArrayNode) tokenizer.get("model").get("merges");
        ArrayNode added = (ArrayNode) tokenizer.get("added_tokens");
        markers.forEach((id, marker) -> {
            String old = null;
            for (var e : vocab.properties()) {
                if (e.getValue().asInt() == id) {
                    old = e.getKey();
                }
            }
            if (old == null) {
                throw new IllegalStateException("no token " + id);
            }
            vocab.remove(old);
            vocab.put(marker.getKey(), id);
            for (int i = merges.size() - 1; i >= 0; i--) {
                JsonNode m = merges.get(i);
                String a = m.isArray() ? m.get(0).asString() : m.asString().split(" ")[0];
                String b = m.isArray() ? m.get(1).asString() : m.asString().split(" ")[1];
                if ((a + b).equals(old)) {
                    merges.remove(i);
                } else if (a.equals(old) || b.equals(old)) {
                    throw new IllegalStateException("token " + id + " is built on by a merge");
                }
            }
            ObjectNode t = added.addObject();
            t.put("id", id);
            t.put("content", marker.getKey());
            t.put("single_word", false);
            t.put("lstrip", false);
            t.put("rstrip", false);
            t.put("normalized", false);
            t.put("special", marker.getValue());
        });
        return tokenizer;
    }
}
