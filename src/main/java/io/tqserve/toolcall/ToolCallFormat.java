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
import java.util.function.Predicate;

/**
 * The tool-call formats of chat templates, one table entry each, as mlx-lm keeps a tool format as markers plus
 * one parse function: what announces calls in free output, how a list of calls and each call are written, the
 * key of the arguments, and which template text selects the entry. The streamed parser ({@link ChatOutputParser})
 * and the grammar of calls ({@link #forcedCalls}, {@link #autoCalls}) both read the entry, so a new format is one
 * new entry and no code.
 *
 * <ul>
 *   <li>{@link #HERMES} (Qwen2.5, Qwen3, Hermes, the embedded model):
 *       {@code <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>}, one block per call;</li>
 *   <li>{@link #LLAMA3_JSON} (Llama 3.1/3.2): the whole answer is {@code {"name": "f", "parameters": {...}}},
 *       possibly after {@code <|python_tag|>}; several calls separated by {@code ;};</li>
 *   <li>{@link #MISTRAL}: {@code [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]}.</li>
 * </ul>
 *
 * <p>The canonical texts below are what the grammar writes; the parser also accepts any whitespace around them.
 */
public enum ToolCallFormat {
    //          marker            special bareStart listOpen callOpen          callClose          separator listClose args
    HERMES("<tool_call>", false, false, "", "<tool_call>\n", "\n</tool_call>", "\n", "", "arguments",
            source -> source.contains("<tool_call>")),
    MISTRAL("[TOOL_CALLS]", true, false, "[", "", "", ", ", "]", "arguments",
            source -> source.contains("[TOOL_CALLS]")),
    LLAMA3_JSON("<|python_tag|>", true, true, "", "", "", "; ", "", "parameters",
            source -> source.contains("<|python_tag|>") || source.contains("ipython"));

    private final String marker;
    private final boolean markerIsSpecial;
    private final boolean bareStart;
    private final String listOpen;
    private final String callOpen;
    private final String callClose;
    private final String separator;
    private final String listClose;
    private final String argumentsKey;
    private final Predicate<String> detect;

    ToolCallFormat(String marker, boolean markerIsSpecial, boolean bareStart, String listOpen, String callOpen,
            String callClose, String separator, String listClose, String argumentsKey, Predicate<String> detect) {
        this.marker = marker;
        this.markerIsSpecial = markerIsSpecial;
        this.bareStart = bareStart;
        this.listOpen = listOpen;
        this.callOpen = callOpen;
        this.callClose = callClose;
        this.separator = separator;
        this.listClose = listClose;
        this.argumentsKey = argumentsKey;
        this.detect = detect;
    }

    /** The format a chat template renders tools for (the first entry whose text it holds), or empty. */
    public static Optional<ToolCallFormat> detect(String templateSource) {
        if (templateSource == null || !templateSource.contains("tools")) {
            return Optional.empty();
        }
        for (ToolCallFormat f : values()) {
            if (f.detect.test(templateSource)) {
                return Optional.of(f);
            }
        }
        return Optional.empty();
    }

    /** Text that announces tool calls in free output. */
    public String marker() {
        return marker;
    }

    /** Whether the marker is a special token, which the detokenizer must then keep in the text. */
    public boolean markerIsSpecial() {
        return markerIsSpecial;
    }

    /** Whether calls may also start the output without the marker (Llama 3.1: a bare JSON object). */
    public boolean bareStart() {
        return bareStart;
    }

    /** Text before the first call of a list, after the marker ({@code [} for Mistral). */
    public String listOpen() {
        return listOpen;
    }

    /** Text before each call (Hermes: the marker and a newline). */
    public String callOpen() {
        return callOpen;
    }

    /** Text after each call. */
    public String callClose() {
        return callClose;
    }

    /** Text between calls. */
    public String separator() {
        return separator;
    }

    /** Text after the last call. */
    public String listClose() {
        return listClose;
    }

    /** The key of a call object that holds its arguments ({@code arguments}, Llama 3.1: {@code parameters}). */
    public String argumentsKey() {
        return argumentsKey;
    }

    /** Whether the marker is written as part of each call (Hermes) rather than once before the list. */
    boolean markerOpensEachCall() {
        return callOpen.strip().equals(marker);
    }

    /**
     * The output when a call is required ({@code tool_choice: required} or a named function): one call of one of
     * {@code tools} (or several if {@code parallel}), as the entry writes a list of calls; a marker that is a
     * special token is left out (the constraint works on text, and the parser takes the list without it).
     */
    public Grammar forcedCalls(List<ToolSpec> tools, boolean parallel) {
        return forcedCalls(tools, parallel, ConstraintLimits.DEFAULT);
    }

    /** As {@link #forcedCalls(List, boolean)}, each tool's parameters compiled within {@code limits}. */
    public Grammar forcedCalls(List<ToolSpec> tools, boolean parallel, ConstraintLimits limits) {
        List<Grammar> calls = new ArrayList<>();
        for (ToolSpec t : tools) {
            calls.add(Grammar.seq(Grammar.literal(callOpen + "{\"name\": " + SchemaCompiler.quote(t.name()) + ", \""
                    + argumentsKey + "\": "), SchemaCompiler.compile(t.parameters(), limits),
                    Grammar.literal("}" + callClose)));
        }
        Grammar call = Grammar.alt(calls);
        Grammar list = parallel ? Grammar.repeat(call, Grammar.literal(separator), 1, -1) : call;
        return Grammar.seq(Grammar.literal(listOpen), list, Grammar.literal(listClose));
    }

    /**
     * The output of {@code tool_choice: auto}: free content or valid calls. With a textual marker: free text that
     * never holds the marker, then optionally well-formed calls (and nothing after them). With calls that may
     * start the output bare (Llama 3.1): free text whose first non-blank character is not {@code {}, or
     * well-formed calls. Null when the only way to start a call is a special-token marker (Mistral), which a text
     * constraint cannot write; such output is free and parsed.
     */
    public Grammar autoCalls(List<ToolSpec> tools, boolean parallel) {
        return autoCalls(tools, parallel, ConstraintLimits.DEFAULT);
    }

    /** As {@link #autoCalls(List, boolean)}, within {@code limits}. */
    public Grammar autoCalls(List<ToolSpec> tools, boolean parallel, ConstraintLimits limits) {
        if (!markerIsSpecial) {
            Grammar calls = markerOpensEachCall() ? forcedCalls(tools, parallel, limits)
                    : Grammar.seq(Grammar.literal(marker), forcedCalls(tools, parallel, limits));
            return Grammar.seq(Grammar.textWithout(marker), calls.optional());
        }
        if (bareStart) {
            return Grammar.alt(List.of(Grammar.textNotOpeningWith("{"), forcedCalls(tools, parallel, limits)));
        }
        return null;
    }

    /** Whether {@code tool_choice: auto} is constrained ({@link #autoCalls} is not null). */
    public boolean autoConstrained() {
        return !markerIsSpecial || bareStart;
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
