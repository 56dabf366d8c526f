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
 *   <li>{@link #MISTRAL_ARGS} (templates of Mistral's tokenizer v11 and later: Mistral Small 3.2, Magistral,
 *       Devstral): {@code [TOOL_CALLS]f[ARGS]{...}} per call, both markers special tokens;</li>
 *   <li>{@link #MISTRAL} (earlier Mistral templates, Mistral Small 3.1):
 *       {@code [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]}.</li>
 * </ul>
 *
 * <p>The canonical texts below are what the grammar writes; the parser also accepts any whitespace around them.
 * A special-token marker is written in a grammar as {@link Grammar#specialToken} (slot 0 the marker, slot 1 the
 * arguments marker) when the model's tokenizer has it as a special token ({@link ChatFormat#constraintTokenBytes}
 * gives the token those bytes), else as its text.
 */
public enum ToolCallFormat {
    //          marker          special bareStart listOpen callOpen       callClose     separator listClose args
    HERMES("<tool_call>", false, false, "", "<tool_call>\n", "\n</tool_call>", "\n", "", "arguments", "",
            source -> source.contains("<tool_call>")),
    MISTRAL_ARGS("[TOOL_CALLS]", true, false, "", "[TOOL_CALLS]", "", "", "", "", "[ARGS]",
            source -> source.contains("[TOOL_CALLS]") && source.contains("[ARGS]")),
    MISTRAL("[TOOL_CALLS]", true, false, "[", "", "", ", ", "]", "arguments", "",
            source -> source.contains("[TOOL_CALLS]")),
    LLAMA3_JSON("<|python_tag|>", true, true, "", "", "", "; ", "", "parameters", "",
            source -> source.contains("<|python_tag|>") || source.contains("ipython"));

    /** The grammar slot of the marker when it is a special token. */
    public static final int MARKER_SLOT = 0;
    /** The grammar slot of the arguments marker ({@code [ARGS]}) when it is a special token. */
    public static final int ARGS_MARKER_SLOT = 1;

    private final String marker;
    private final boolean markerIsSpecial;
    private final boolean bareStart;
    private final String listOpen;
    private final String callOpen;
    private final String callClose;
    private final String separator;
    private final String listClose;
    private final String argumentsKey;
    private final String argsMarker;
    private final Predicate<String> detect;

    ToolCallFormat(String marker, boolean markerIsSpecial, boolean bareStart, String listOpen, String callOpen,
            String callClose, String separator, String listClose, String argumentsKey, String argsMarker,
            Predicate<String> detect) {
        this.marker = marker;
        this.markerIsSpecial = markerIsSpecial;
        this.bareStart = bareStart;
        this.listOpen = listOpen;
        this.callOpen = callOpen;
        this.callClose = callClose;
        this.separator = separator;
        this.listClose = listClose;
        this.argumentsKey = argumentsKey;
        this.argsMarker = argsMarker;
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

    /**
     * The key of a call object that holds its arguments ({@code arguments}, Llama 3.1: {@code parameters}); empty
     * when a call is not an object but its name, the {@link #argsMarker()} and the arguments.
     */
    public String argumentsKey() {
        return argumentsKey;
    }

    /**
     * The marker between a call's name and its arguments object ({@code [ARGS]}, a special token like the marker),
     * or empty when a call is a JSON object holding both.
     */
    public String argsMarker() {
        return argsMarker;
    }

    /** The special-token texts of this format by grammar slot (empty when its markers are text). */
    public List<String> specialMarkers() {
        if (!markerIsSpecial) {
            return List.of();
        }
        return argsMarker.isEmpty() ? List.of(marker) : List.of(marker, argsMarker);
    }

    /** Whether the marker is written as part of each call (Hermes) rather than once before the list. */
    boolean markerOpensEachCall() {
        return callOpen.strip().equals(marker);
    }

    /**
     * The output when a call is required ({@code tool_choice: required} or a named function): one call of one of
     * {@code tools} (or several if {@code parallel}), as the entry writes a list of calls, its markers written as
     * text.
     */
    public Grammar forcedCalls(List<ToolSpec> tools, boolean parallel) {
        return forcedCalls(tools, parallel, ConstraintLimits.DEFAULT, false);
    }

    /**
     * As {@link #forcedCalls(List, boolean)}, each tool's parameters compiled within {@code limits}; with
     * {@code markerTokens} the special-token markers are written as {@link Grammar#specialToken}s. A bare-start
     * format (Llama 3.1) writes its calls without the marker.
     */
    public Grammar forcedCalls(List<ToolSpec> tools, boolean parallel, ConstraintLimits limits,
            boolean markerTokens) {
        Grammar list = callList(tools, parallel, limits, markerTokens);
        return markerOpensEachCall() || bareStart ? list : Grammar.seq(marker(markerTokens), list);
    }

    /** The calls after the marker (the marker too where it opens each call). */
    private Grammar callList(List<ToolSpec> tools, boolean parallel, ConstraintLimits limits, boolean markerTokens) {
        Grammar open = markerOpensEachCall()
                ? Grammar.seq(marker(markerTokens), Grammar.literal(callOpen.substring(marker.length())))
                : Grammar.literal(callOpen);
        List<Grammar> calls = new ArrayList<>();
        for (ToolSpec t : tools) {
            Grammar arguments = SchemaCompiler.compileForGeneration(t.parameters(), limits);
            calls.add(argsMarker.isEmpty()
                    ? Grammar.seq(open, Grammar.literal("{\"name\": " + SchemaCompiler.quote(t.name()) + ", \""
                            + argumentsKey + "\": "), arguments, Grammar.literal("}" + callClose))
                    : Grammar.seq(open, Grammar.literal(t.name()), markerTokens
                            ? Grammar.specialToken(ARGS_MARKER_SLOT) : Grammar.literal(argsMarker), arguments,
                            Grammar.literal(callClose)));
        }
        Grammar call = Grammar.alt(calls);
        Grammar list = parallel ? Grammar.repeat(call, Grammar.literal(separator), 1, -1) : call;
        return Grammar.seq(Grammar.literal(listOpen), list, Grammar.literal(listClose));
    }

    private Grammar marker(boolean markerTokens) {
        return markerIsSpecial && markerTokens ? Grammar.specialToken(MARKER_SLOT) : Grammar.literal(marker);
    }

    /**
     * The output of {@code tool_choice: auto}: free content or valid calls. Where the marker announces calls:
     * free text that never holds the marker (nor a special token), then optionally well-formed calls starting with
     * the marker (and nothing after them). With calls that may start the output bare (Llama 3.1): free text whose
     * first non-blank character is not {@code {}, or well-formed calls.
     *
     * @param markerTokens the special-token markers are written as {@link Grammar#specialToken}s
     */
    public Grammar autoCalls(List<ToolSpec> tools, boolean parallel, ConstraintLimits limits, boolean markerTokens) {
        if (bareStart) {
            return Grammar.alt(List.of(Grammar.textNotOpeningWith("{"),
                    forcedCalls(tools, parallel, limits, markerTokens)));
        }
        return Grammar.seq(Grammar.textWithout(marker), forcedCalls(tools, parallel, limits, markerTokens)
                .optional());
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
