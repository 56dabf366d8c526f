package io.tqserve.template;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/** Reads a model folder's chat template and the special tokens transformers passes to it. */
final class TemplateSources {
    private static final ObjectMapper JSON = JsonMapper.builder().build();

    /** The special-token attributes transformers puts into the render context (its special_tokens_map). */
    private static final List<String> SPECIAL_TOKEN_KEYS = List.of("bos_token", "eos_token", "unk_token",
            "sep_token", "pad_token", "cls_token", "mask_token", "additional_special_tokens");

    record Source(String source, Map<String, Object> specialTokens) {
    }

    private TemplateSources() {
    }

    static Optional<Source> load(Path modelDir) {
        Path config = modelDir.resolve("tokenizer_config.json");
        JsonNode tree = Files.isRegularFile(config) ? JSON.readTree(config.toFile()) : JSON.missingNode();
        Path jinja = modelDir.resolve("chat_template.jinja");
        if (Files.isRegularFile(jinja)) {
            try {
                return Optional.of(new Source(Files.readString(jinja), specialTokens(tree)));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        String source = templateSource(tree.path("chat_template"), config);
        return source == null ? Optional.empty() : Optional.of(new Source(source, specialTokens(tree)));
    }

    static Source fromTokenizerConfig(Path file) {
        if (!Files.isRegularFile(file)) {
            throw new UncheckedIOException(new IOException("no such file: " + file.toAbsolutePath()));
        }
        JsonNode tree = JSON.readTree(file.toFile());
        String source = templateSource(tree.path("chat_template"), file);
        if (source == null) {
            throw new TemplateException(file + " has no chat_template", 0);
        }
        return new Source(source, specialTokens(tree));
    }

    /** {@code chat_template} is a string, or a list of {"name", "template"} of which "default" is the chat one. */
    private static String templateSource(JsonNode node, Path file) {
        if (node.isString()) {
            return node.asString();
        }
        if (node.isArray()) {
            for (JsonNode named : node) {
                if ("default".equals(named.path("name").asString(null))) {
                    return named.path("template").asString();
                }
            }
            throw new TemplateException(file + " lists chat templates but none named \"default\"", 0);
        }
        return null;
    }

    private static Map<String, Object> specialTokens(JsonNode config) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (String key : SPECIAL_TOKEN_KEYS) {
            JsonNode value = config.path(key);
            if (value.isArray()) {
                List<String> tokens = new ArrayList<>();
                value.forEach(v -> tokens.add(tokenText(v)));
                if (!tokens.isEmpty()) {
                    out.put(key, List.copyOf(tokens));
                }
            } else {
                String token = tokenText(value);
                if (token != null) {
                    out.put(key, token);
                }
            }
        }
        return out;
    }

    /** A special token is stored as a string or as an AddedToken object {"content": ...}. */
    private static String tokenText(JsonNode value) {
        if (value.isObject()) {
            return value.path("content").asString(null);
        }
        return value.isString() ? value.asString() : null;
    }
}
