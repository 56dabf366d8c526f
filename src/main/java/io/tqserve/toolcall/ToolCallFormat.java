package io.tqserve.toolcall;

import io.tqserve.constraint.ConstraintLimits;
import io.tqserve.constraint.Grammar;
import io.tqserve.constraint.SchemaCompiler;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * How a chat template asks the model to write tool calls, chosen from the template's text as mlx-lm and vLLM do:
 *
 * <ul>
 *   <li>{@link #HERMES} (Qwen2.5, Qwen3, Hermes, the embedded model):
 *       {@code <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>}, one block per call;</li>
 *   <li>{@link #LLAMA3_JSON} (Llama 3.1/3.2): the whole answer is {@code {"name": "f", "parameters": {...}}},
 *       possibly after {@code <|python_tag|>}; several calls separated by {@code ;};</li>
 *   <li>{@link #MISTRAL}: {@code [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]} (and the newer
 *       {@code [TOOL_CALLS]f[ARGS]{...}}).</li>
 * </ul>
 */
public enum ToolCallFormat {
    HERMES("<tool_call>", "arguments", false),
    LLAMA3_JSON("<|python_tag|>", "parameters", true),
    MISTRAL("[TOOL_CALLS]", "arguments", true);

    static final JsonMapper JSON = JsonMapper.builder().build();

    private final String marker;
    private final String argumentsKey;
    private final boolean markerIsSpecial;

    ToolCallFormat(String marker, String argumentsKey, boolean markerIsSpecial) {
        this.marker = marker;
        this.argumentsKey = argumentsKey;
        this.markerIsSpecial = markerIsSpecial;
    }

    /** The format a chat template renders tools for, or empty if its text never handles tools. */
    public static Optional<ToolCallFormat> detect(String templateSource) {
        if (templateSource == null || !templateSource.contains("tools")) {
            return Optional.empty();
        }
        if (templateSource.contains("<tool_call>")) {
            return Optional.of(HERMES);
        }
        if (templateSource.contains("[TOOL_CALLS]")) {
            return Optional.of(MISTRAL);
        }
        if (templateSource.contains("<|python_tag|>") || templateSource.contains("ipython")) {
            return Optional.of(LLAMA3_JSON);
        }
        return Optional.empty();
    }

    /** Text that starts tool-call markup in the output (Llama 3 may also start with a bare JSON object). */
    public String marker() {
        return marker;
    }

    /** Whether the marker is a special token, which the detokenizer must then keep in the text. */
    public boolean markerIsSpecial() {
        return markerIsSpecial;
    }

    /**
     * The output when a call is required ({@code tool_choice: required} or a named function): one call of one of
     * {@code tools} (or several if {@code parallel}), in this format's bare form.
     */
    public Grammar forcedCalls(List<ToolSpec> tools, boolean parallel) {
        return forcedCalls(tools, parallel, ConstraintLimits.DEFAULT);
    }

    /** As {@link #forcedCalls(List, boolean)}, each tool's parameters compiled within {@code limits}. */
    public Grammar forcedCalls(List<ToolSpec> tools, boolean parallel, ConstraintLimits limits) {
        List<Grammar> calls = new ArrayList<>();
        for (ToolSpec t : tools) {
            calls.add(Grammar.seq(Grammar.literal("{\"name\": " + SchemaCompiler.quote(t.name()) + ", \""
                    + argumentsKey + "\": "), SchemaCompiler.compile(t.parameters(), limits), Grammar.literal("}")));
        }
        Grammar call = Grammar.alt(calls);
        return switch (this) {
            case HERMES -> {
                Grammar block = Grammar.seq(Grammar.literal("<tool_call>\n"), call, Grammar.literal("\n</tool_call>"));
                yield parallel ? Grammar.repeat(block, Grammar.literal("\n"), 1, -1) : block;
            }
            case LLAMA3_JSON -> parallel ? Grammar.repeat(call, Grammar.literal("; "), 1, -1) : call;
            case MISTRAL -> Grammar.seq(Grammar.literal("["),
                    parallel ? Grammar.repeat(call, Grammar.literal(", "), 1, -1) : call, Grammar.literal("]"));
        };
    }

    /**
     * The output of {@code tool_choice: auto} in the Hermes format: free text that never starts a
     * {@code <tool_call>}, then optionally well-formed call blocks (and nothing after them). Null for the formats
     * whose call has no textual start marker; their auto output is free and parsed afterwards.
     */
    public Grammar autoCalls(List<ToolSpec> tools, boolean parallel) {
        return autoCalls(tools, parallel, ConstraintLimits.DEFAULT);
    }

    /** As {@link #autoCalls(List, boolean)}, within {@code limits}. */
    public Grammar autoCalls(List<ToolSpec> tools, boolean parallel, ConstraintLimits limits) {
        if (this != HERMES) {
            return null;
        }
        return Grammar.seq(Grammar.textWithout(marker), forcedCalls(tools, parallel, limits).optional());
    }

    /** Text with its tool calls taken out. */
    public record Parsed(String content, List<ToolCall> calls) {
    }

    /**
     * Splits complete output text into content and calls. {@code bare}: the output is the calls' bare form (a call
     * was forced, so Llama/Mistral markers are absent). Text that is not a well-formed call stays content.
     */
    public Parsed parse(String text, boolean bare) {
        List<ToolCall> calls = new ArrayList<>();
        return switch (this) {
            case HERMES -> {
                StringBuilder content = new StringBuilder();
                int at = 0;
                while (true) {
                    int start = text.indexOf("<tool_call>", at);
                    int end = start < 0 ? -1 : text.indexOf("</tool_call>", start);
                    if (start < 0 || end < 0) {
                        content.append(text, at, text.length());
                        break;
                    }
                    ToolCall c = call(text.substring(start + "<tool_call>".length(), end));
                    if (c == null) {
                        content.append(text, at, end + "</tool_call>".length());
                    } else {
                        content.append(text, at, start);
                        calls.add(c);
                    }
                    at = end + "</tool_call>".length();
                }
                yield new Parsed(calls.isEmpty() ? text : content.toString().strip(), calls);
            }
            case LLAMA3_JSON -> {
                String t = text.strip();
                if (t.startsWith(marker)) {
                    t = t.substring(marker.length()).strip();
                } else if (!t.startsWith("{")) {
                    yield new Parsed(text, calls);
                }
                for (String part : t.split(";\\s*(?=\\{)")) {
                    ToolCall c = call(part);
                    if (c == null) {
                        yield new Parsed(text, List.of());
                    }
                    calls.add(c);
                }
                yield new Parsed("", calls);
            }
            case MISTRAL -> {
                int m = bare ? 0 : text.indexOf(marker);
                if (m < 0) {
                    yield new Parsed(text, calls);
                }
                String before = text.substring(0, m).strip();
                String rest = text.substring(bare ? 0 : m + marker.length()).strip();
                List<ToolCall> parsed = mistral(rest);
                yield parsed == null ? new Parsed(text, List.of()) : new Parsed(before, parsed);
            }
        };
    }

    private List<ToolCall> mistral(String rest) {
        List<ToolCall> calls = new ArrayList<>();
        if (rest.startsWith("[")) {
            JsonNode arr = read(rest);
            if (arr == null || !arr.isArray()) {
                return null;
            }
            for (JsonNode n : arr) {
                ToolCall c = call(n);
                if (c == null) {
                    return null;
                }
                calls.add(c);
            }
            return calls;
        }
        // [TOOL_CALLS]name[ARGS]{...}[TOOL_CALLS]name2[ARGS]{...}
        for (String part : rest.split("\\[TOOL_CALLS]")) {
            int a = part.indexOf("[ARGS]");
            if (a <= 0) {
                return null;
            }
            JsonNode args = read(part.substring(a + "[ARGS]".length()).strip());
            if (args == null || !args.isObject()) {
                return null;
            }
            calls.add(new ToolCall(newId(), part.substring(0, a).strip(), args.toString()));
        }
        return calls;
    }

    private ToolCall call(String json) {
        JsonNode n = read(json.strip());
        return n == null ? null : call(n);
    }

    private ToolCall call(JsonNode n) {
        if (!n.isObject() || !n.path("name").isString()) {
            return null;
        }
        JsonNode args = n.has(argumentsKey) ? n.get(argumentsKey) : n.get("arguments");
        if (args == null || args.isNull()) {
            return new ToolCall(newId(), n.get("name").asString(), "{}");
        }
        if (args.isString()) { // some models write the arguments as a JSON string
            JsonNode inner = read(args.asString());
            args = inner != null && inner.isObject() ? inner : null;
        }
        return args != null && args.isObject() ? new ToolCall(newId(), n.get("name").asString(), args.toString())
                : null;
    }

    private static JsonNode read(String s) {
        try {
            return JSON.readTree(s);
        } catch (JacksonException e) {
            return null;
        }
    }

    /** A new call id: {@code call_} and 24 hex digits. */
    public static String newId() {
        byte[] b = new byte[12];
        ThreadLocalRandom.current().nextBytes(b);
        return "call_" + HexFormat.of().formatHex(b);
    }

    /** The arguments of a tool schema for {@link SchemaCompiler}: {@code {}} when the client gave none. */
    public static Map<String, Object> parametersOrEmpty(Map<String, Object> parameters) {
        return parameters == null ? Map.of("type", "object") : parameters;
    }
}
