package io.tqserve.template;

import java.nio.file.Path;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A Hugging Face chat template, compiled once and rendered as transformers' {@code apply_chat_template} renders
 * it with Python's Jinja2: the same environment ({@code trim_blocks}, {@code lstrip_blocks}, loop controls,
 * {@code raise_exception}, {@code strftime_now}, {@code tojson} as {@code json.dumps(ensure_ascii=False)}) and the
 * same render variables ({@code messages}, {@code tools}, {@code documents = None}, {@code add_generation_prompt},
 * the special tokens, extra keyword arguments such as {@code enable_thinking}).
 *
 * <p>Messages and tools are JSON-like Java values (maps, lists, strings, numbers, booleans, null), passed to the
 * template as they are: a message's {@code tool_calls} with {@code function.arguments} as a map, its
 * {@code tool_call_id}, {@code name}, {@code reasoning_content}, a {@code content} list of parts. Tools are what
 * transformers receives: a list of {@code {"type": "function", "function": {name, description, parameters}}}.
 *
 * <p>Instances are immutable and thread-safe; {@link #render} allocates only its own output and frames.
 */
public final class ChatTemplate {
    private static final System.Logger LOG = System.getLogger(ChatTemplate.class.getName());
    private static final Set<String> RESERVED = Set.of("messages", "add_generation_prompt", "tools", "documents");

    private final String source;
    private final List<Node> body;
    private final TemplateOptions options;
    private final Map<String, Object> globals;
    private final List<String> warnings;

    private ChatTemplate(String source, TemplateOptions options) {
        this.source = source;
        this.body = Parser.parse(source);
        this.options = options;
        this.globals = Globals.create(() -> LocalDateTime.now(options.clock()));
        this.warnings = List.copyOf(TemplateProbe.check(this));
        for (String w : warnings) {
            LOG.log(System.Logger.Level.WARNING, w);
        }
    }

    /**
     * Compiles a template.
     *
     * @throws TemplateException if it has a syntax error, uses a filter or test Jinja2 does not have, or renders
     *                           no basic conversation at all
     */
    public static ChatTemplate compile(String source, TemplateOptions options) {
        return new ChatTemplate(source, options);
    }

    /** {@link #compile} with the special tokens given and the system clock. */
    public static ChatTemplate compile(String source, Map<String, ?> specialTokens) {
        return new ChatTemplate(source, TemplateOptions.of(specialTokens));
    }

    /**
     * The template of a Hugging Face model folder: {@code chat_template.jinja} if present, else
     * {@code tokenizer_config.json}'s {@code chat_template}, with the special tokens of {@code tokenizer_config.json};
     * empty if the model has none.
     */
    public static Optional<ChatTemplate> load(Path modelDir) {
        return TemplateSources.load(modelDir).map(s -> compile(s.source(), TemplateOptions.of(s.specialTokens())));
    }

    /** The {@code chat_template} of a {@code tokenizer_config.json} file with its special tokens. */
    public static ChatTemplate fromTokenizerConfig(Path tokenizerConfigJson, TemplateOptions overrides) {
        TemplateSources.Source s = TemplateSources.fromTokenizerConfig(tokenizerConfigJson);
        return compile(s.source(), new TemplateOptions(s.specialTokens(), overrides.clock()));
    }

    /**
     * Renders a conversation as {@code apply_chat_template(messages, tools=tools,
     * add_generation_prompt=addGenerationPrompt, **extraKwargs)} does.
     *
     * @param messages            list of message maps ({@code role}, {@code content}, any other fields)
     * @param tools               list of tool maps, or null for {@code tools=None}
     * @param addGenerationPrompt append the assistant turn header
     * @param extraKwargs         extra template variables (e.g. {@code enable_thinking -> false}); they override
     *                            special tokens of the same name, as in transformers
     * @throws TemplateException        if the template raises ({@link TemplateException#raisedByTemplate()}) or fails
     * @throws IllegalArgumentException for a reserved variable in {@code extraKwargs} or a non-JSON-like value
     */
    public String render(List<?> messages, List<?> tools, boolean addGenerationPrompt, Map<String, ?> extraKwargs) {
        for (String name : extraKwargs.keySet()) {
            if (RESERVED.contains(name)) {
                throw new IllegalArgumentException("'" + name + "' is set by the renderer, not a template variable");
            }
        }
        Map<String, Object> context = new HashMap<>(globals.size() + options.specialTokens().size() + 8);
        context.putAll(globals);
        context.putAll(options.specialTokens());
        extraKwargs.forEach((k, v) -> context.put(k, PyValues.fromJava(v)));
        context.put("messages", PyValues.fromJava(messages));
        context.put("tools", tools == null ? null : PyValues.fromJava(tools));
        context.put("documents", null);
        context.put("add_generation_prompt", addGenerationPrompt);
        StringBuilder out = new StringBuilder(256 + 64 * messages.size());
        new Renderer().render(body, new Scope(null, context), out);
        return out.toString();
    }

    /** {@link #render(List, List, boolean, Map)} without tools or extra variables. */
    public String render(List<?> messages, boolean addGenerationPrompt) {
        return render(messages, null, addGenerationPrompt, Map.of());
    }

    /** The template text. */
    public String source() {
        return source;
    }

    /** The special tokens passed to every render. */
    public Map<String, Object> specialTokens() {
        return options.specialTokens();
    }

    /**
     * What the load-time probe noticed without refusing the template, e.g. that it drops the system message of a
     * conversation (logged once at load as a warning).
     */
    public List<String> warnings() {
        return warnings;
    }

    /** A message map for {@link #render}: {@code {"role": role, "content": content}}. */
    public static Map<String, Object> message(String role, String content) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("role", role);
        m.put("content", content);
        return m;
    }

    /** A list of message maps from (role, content) pairs. */
    static List<Map<String, Object>> messages(String... roleContent) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (int i = 0; i + 1 < roleContent.length; i += 2) {
            out.add(message(roleContent[i], roleContent[i + 1]));
        }
        return out;
    }
}
