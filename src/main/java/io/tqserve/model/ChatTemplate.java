package io.tqserve.model;

import com.hubspot.jinjava.interpret.RenderResult;
import com.hubspot.jinjava.interpret.TemplateError;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/**
 * A Hugging Face chat template ({@code chat_template} of {@code tokenizer_config.json}, or
 * {@code chat_template.jinja}) rendered with HubSpot Jinjava set up to behave like Python Jinja2 under
 * transformers' {@code apply_chat_template} ({@link JinjaEnvironment}).
 *
 * <p>The render context is what transformers passes: {@code messages}, {@code add_generation_prompt},
 * {@code tools = None}, {@code documents = None}, the special tokens of {@code tokenizer_config.json}
 * ({@code bos_token}, {@code eos_token}, {@code unk_token}, {@code pad_token}, ... as strings) and any extra
 * variables (e.g. Qwen3's {@code enable_thinking}).
 *
 * <p>A template Jinjava cannot render faithfully fails at construction with a {@link ChatTemplateException} — never
 * a silently different prompt: the source is checked for constructs Jinjava would get wrong without an error
 * ({@link TemplateChecks}), then probe conversations are rendered and any Jinjava error (unsupported syntax, an
 * unknown function, a failing method call) or a probe message missing from the output is reported. Instances are
 * immutable and thread-safe.
 */
public final class ChatTemplate {

    private static final ObjectMapper JSON = JsonMapper.builder().build();

    /** The special-token attributes transformers puts into the render context. */
    private static final List<String> SPECIAL_TOKEN_KEYS = List.of("bos_token", "eos_token", "unk_token",
            "sep_token", "pad_token", "cls_token", "mask_token", "additional_special_tokens");
    private static final Set<String> RESERVED = Set.of("messages", "add_generation_prompt", "tools", "documents");

    private static final String PROBE_SYSTEM = "Probe system prompt 7f3a.";
    private static final String PROBE_USER = "Probe user question 9c1e?";
    private static final String PROBE_ASSISTANT = "Probe assistant answer 2b8d.";
    private static final String PROBE_FOLLOW_UP = "Probe follow-up 5e0f!";

    private final String source;
    private final String jinjavaSource;   // source after Jinja2's whitespace rules
    private final Map<String, Object> specialTokens;

    private ChatTemplate(String source, Map<String, Object> specialTokens) {
        this.source = source;
        this.jinjavaSource = TemplateWhitespace.apply(source);
        this.specialTokens = Collections.unmodifiableMap(new LinkedHashMap<>(specialTokens));
        probe();
    }

    /**
     * The template of a Hugging Face model folder: {@code chat_template.jinja} if present (newer transformers save
     * it there), else {@code tokenizer_config.json}'s {@code chat_template}; empty if the model has none.
     *
     * @throws ChatTemplateException if the model's template cannot be rendered faithfully
     */
    public static Optional<ChatTemplate> load(Path modelDir) {
        Path config = modelDir.resolve("tokenizer_config.json");
        JsonNode tree = Files.isRegularFile(config) ? JSON.readTree(config.toFile()) : JSON.missingNode();
        Path jinja = modelDir.resolve("chat_template.jinja");
        if (Files.isRegularFile(jinja)) {
            try {
                return Optional.of(new ChatTemplate(Files.readString(jinja), specialTokens(tree)));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        String source = templateSource(tree.path("chat_template"), config);
        return source == null ? Optional.empty() : Optional.of(new ChatTemplate(source, specialTokens(tree)));
    }

    /** The {@code chat_template} of a {@code tokenizer_config.json} file, with its special tokens. */
    public static ChatTemplate fromTokenizerConfig(Path tokenizerConfigJson) throws IOException {
        if (!Files.isRegularFile(tokenizerConfigJson)) {
            throw new IOException("no such file: " + tokenizerConfigJson.toAbsolutePath());
        }
        JsonNode tree = JSON.readTree(tokenizerConfigJson.toFile());
        String source = templateSource(tree.path("chat_template"), tokenizerConfigJson);
        if (source == null) {
            throw new ChatTemplateException(tokenizerConfigJson + " has no chat_template", false);
        }
        return new ChatTemplate(source, specialTokens(tree));
    }

    /** A template given as source, with its special tokens ({@code bos_token} -> {@code "<s>"}, ...). */
    public static ChatTemplate of(String source, Map<String, ?> specialTokens) {
        return new ChatTemplate(source, new LinkedHashMap<>(specialTokens));
    }

    /** Renders {@code messages}; {@code addGenerationPrompt} appends the assistant turn header. */
    public String render(List<ChatMessage> messages, boolean addGenerationPrompt) {
        return render(messages, addGenerationPrompt, Map.of());
    }

    /**
     * Renders {@code messages} with extra template variables (e.g. {@code enable_thinking -> false}).
     *
     * @throws ChatTemplateException if the template rejects the conversation ({@code raisedByTemplate()}) or fails
     */
    public String render(List<ChatMessage> messages, boolean addGenerationPrompt, Map<String, ?> variables) {
        List<Map<String, Object>> turns = new ArrayList<>(messages.size());
        for (ChatMessage m : messages) {
            Map<String, Object> turn = new LinkedHashMap<>();
            turn.put("role", m.role());
            turn.put("content", m.content());
            turns.add(turn);
        }
        return renderTurns(turns, null, addGenerationPrompt, variables);
    }

    /**
     * Renders messages given as JSON-like maps (with {@code tool_calls}, {@code tool_call_id}, ... as transformers'
     * {@code apply_chat_template} receives them) and the request's {@code tools} (function definitions, or null).
     *
     * @throws ChatTemplateException if the template rejects the conversation ({@code raisedByTemplate()}) or fails
     */
    public String renderTurns(List<Map<String, Object>> turns, List<?> tools, boolean addGenerationPrompt,
            Map<String, ?> variables) {
        for (String name : variables.keySet()) {
            if (RESERVED.contains(name)) {
                throw new IllegalArgumentException("'" + name + "' is set by the renderer, not a template variable");
            }
        }
        Map<String, Object> context = new HashMap<>(specialTokens);
        context.putAll(variables);
        context.put("messages", turns);
        context.put("add_generation_prompt", addGenerationPrompt);
        context.put("tools", tools == null || tools.isEmpty() ? null : tools);
        context.put("documents", null);

        RenderResult result = JinjaEnvironment.jinjava().renderForResult(jinjavaSource, context);
        if (!result.getErrors().isEmpty()) {
            throw failure(result.getErrors());
        }
        return result.getOutput();
    }

    /** The template text. */
    public String source() {
        return source;
    }

    /** Special tokens passed to the template ({@code bos_token} -> text, {@code additional_special_tokens} -> list). */
    public Map<String, Object> specialTokens() {
        return specialTokens;
    }

    /**
     * Renders probe conversations (with and without a system prompt, with and without the generation prompt). A
     * probe the template refuses through {@code raise_exception} (e.g. "system role not supported") is skipped, but
     * at least one must render; every rendered probe must contain each message's text.
     */
    private void probe() {
        List<String> unknown = TemplateChecks.unsupported(jinjavaSource, JinjaEnvironment.jinjava());
        if (!unknown.isEmpty()) {
            throw new ChatTemplateException("chat template uses what tqserve's Jinja engine does not have: "
                    + String.join(", ", unknown), false);
        }
        List<List<ChatMessage>> probes = List.of(
                List.of(ChatMessage.system(PROBE_SYSTEM), ChatMessage.user(PROBE_USER),
                        ChatMessage.assistant(PROBE_ASSISTANT), ChatMessage.user(PROBE_FOLLOW_UP)),
                List.of(ChatMessage.user(PROBE_USER), ChatMessage.assistant(PROBE_ASSISTANT),
                        ChatMessage.user(PROBE_FOLLOW_UP)),
                List.of(ChatMessage.user(PROBE_USER)));
        int rendered = 0;
        List<String> refusals = new ArrayList<>();
        for (List<ChatMessage> probe : probes) {
            for (boolean generationPrompt : new boolean[] {true, false}) {
                String text;
                try {
                    text = render(probe, generationPrompt);
                } catch (ChatTemplateException e) {
                    if (e.raisedByTemplate()) {
                        refusals.add(e.getMessage());
                        continue;
                    }
                    throw new ChatTemplateException("chat template cannot be rendered by tqserve's Jinja engine: "
                            + e.getMessage(), e);
                }
                for (ChatMessage m : probe) {
                    if (!text.contains(m.content())) {
                        throw new ChatTemplateException("chat template rendering lost the " + m.role()
                                + " message of a probe conversation; output was: " + text, false);
                    }
                }
                rendered++;
            }
        }
        if (rendered == 0) {
            throw new ChatTemplateException("chat template refused every probe conversation: " + refusals, false);
        }
    }

    private static ChatTemplateException failure(List<TemplateError> errors) {
        for (TemplateError error : errors) {
            for (Throwable t = error.getException(); t != null; t = t.getCause()) {
                if (t instanceof JinjaEnvironment.TemplateRaised raised) {
                    return new ChatTemplateException(raised.getMessage(), true);
                }
            }
        }
        StringBuilder message = new StringBuilder("chat template failed to render:");
        for (TemplateError error : errors) {
            message.append("\n  line ").append(error.getLineno()).append(": ").append(error.getSeverity())
                    .append(' ').append(error.getReason()).append(' ').append(error.getMessage());
            if (error.getFieldName() != null && !error.getFieldName().isEmpty()) {
                message.append(" [in: ").append(error.getFieldName()).append(']');
            }
        }
        return new ChatTemplateException(message.toString(), false);
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
            throw new ChatTemplateException(file + " lists chat templates but none named \"default\"", false);
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
