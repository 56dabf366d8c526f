package io.tqserve.api;

import io.tqserve.api.openai.Wire;
import io.tqserve.constraint.ConstraintLimits;
import io.tqserve.constraint.Grammar;
import io.tqserve.constraint.SchemaCompiler;
import io.tqserve.constraint.TokenConstraint;
import io.tqserve.constraint.UnsupportedSchemaException;
import io.tqserve.constraint.Vocabulary;
import io.tqserve.engine.OutputRules;
import io.tqserve.model.Model;
import io.tqserve.model.TokenBytes;
import io.tqserve.toolcall.ChatFormat;
import io.tqserve.toolcall.ChatOutputParser;
import io.tqserve.toolcall.ToolCallFormat;
import io.tqserve.toolcall.ToolSpec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * What a chat request asks of its output beyond free text, for one served model: the constraint (response_format,
 * a forced or possible tool call), read with the model's {@link ChatFormat} (tool-call entry, reasoning markers and
 * the token that ends reasoning). Compiled constraints are cached per schema (least recently used first out), so a
 * schema's grammar is compiled once.
 */
final class StructuredOutput {
    static final int CACHE_SIZE = 64;

    /**
     * How to shape and read one response.
     *
     * @param rules             the lane's output rules
     * @param format            the template's tool-call format when tools are active, else null
     * @param reasoning         the template's reasoning markers, or null
     * @param startsInReasoning the prompt ends in an open reasoning block
     * @param callForced        tool_choice required or named
     * @param parallel          several calls may be made (parallel_tool_calls and no named function)
     */
    record Plan(OutputRules rules, ToolCallFormat format, ChatFormat.Reasoning reasoning, boolean startsInReasoning,
            boolean callForced, boolean parallel) {
        static final Plan NONE = new Plan(OutputRules.NONE, null, null, false, false, true);

        /** The same plan with other output rules. */
        Plan withRules(OutputRules other) {
            return new Plan(other, format, reasoning, startsInReasoning, callForced, parallel);
        }

        /** A parser for the generated text, or null when the text is the content as it is. */
        ChatOutputParser parser() {
            return format == null && reasoning == null ? null
                    : new ChatOutputParser(format, reasoning, startsInReasoning, callForced, parallel);
        }
    }

    private final Model model;
    private volatile Vocabulary vocabulary;
    private final Map<String, TokenConstraint> cache = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, TokenConstraint> eldest) {
            return size() > CACHE_SIZE;
        }
    };

    StructuredOutput(Model model) {
        this.model = model;
    }

    /** The grammar of json_object: any JSON object. */
    static Grammar jsonObject() {
        return SchemaCompiler.anyObject(ConstraintLimits.DEFAULT);
    }

    Model model() {
        return model;
    }

    /** The tool-call format of the model's template; a 400 if the request has tools it cannot render. */
    Optional<ToolCallFormat> toolFormat(ChatRequest chat) {
        if (chat == null || chat.toolSpecs().isEmpty()) {
            return Optional.empty();
        }
        Optional<ToolCallFormat> f = ChatFormats.of(model).tools();
        if (f.isEmpty()) {
            throw ApiException.invalid("tools", "the chat template of the served model cannot render tools (it has"
                    + " no tool-call format: Hermes <tool_call>, Llama 3.1 JSON or Mistral [TOOL_CALLS])");
        }
        return f;
    }

    Plan plan(ParsedRequest r, String prompt, int maxTokens) {
        ChatRequest chat = r.chat();
        if (chat == null) {
            return Plan.NONE;
        }
        ChatFormat chatFormat = ChatFormats.of(model);
        ChatFormat.Reasoning reasoning = chatFormat.reasoning().orElse(null);
        boolean openThink = chatFormat.opensReasoning(prompt);
        boolean thinksFirst = chatFormat.reasonsFirst(prompt);
        ToolCallFormat format = chat.toolsActive() ? toolFormat(chat).orElseThrow() : null;
        boolean parallel = chat.parallelToolCalls() && chat.namedTool() == null;
        String key;
        Supplier<Grammar> grammar;
        String param;
        if (chat.format().constrained()) {
            param = "response_format";
            boolean object = chat.format().type().equals("json_object");
            key = object ? "json_object" : "json_schema:" + Wire.json(chat.format().schema());
            grammar = object ? StructuredOutput::jsonObject
                    : () -> SchemaCompiler.compile(chat.format().schema());
        } else if (format != null && (chat.callForced() || format.autoConstrained())) {
            param = "tools";
            List<ToolSpec> tools = chat.namedTool() == null ? chat.toolSpecs()
                    : chat.toolSpecs().stream().filter(t -> t.name().equals(chat.namedTool())).toList();
            key = format + ":" + chat.callForced() + ":" + parallel + ":" + Wire.json(tools);
            grammar = chat.callForced() ? () -> format.forcedCalls(tools, parallel)
                    : () -> format.autoCalls(tools, parallel);
        } else {
            // no constraint: free text (a Mistral auto tool choice is parsed afterwards)
            boolean keep = format != null && format.markerIsSpecial();
            return new Plan(new OutputRules(null, -1, keep), format, reasoning, openThink, false, parallel);
        }
        int gate = -1;
        if (thinksFirst && chatFormat.reasoningEndToken().isPresent()) {
            gate = chatFormat.reasoningEndToken().getAsInt();
            Supplier<Grammar> inner = grammar;
            grammar = () -> Grammar.seq(Grammar.repeat(Grammar.literal("\n"), null, 0, 2), inner.get());
            key = "gated:" + key;
        }
        TokenConstraint constraint;
        try {
            constraint = constraint(key, grammar);
        } catch (UnsupportedSchemaException e) {
            throw ApiException.invalid(param, "unsupported_schema", e.getMessage());
        }
        int needed = constraint.minTokens() + (gate >= 0 ? 1 : 0);
        if (needed > maxTokens) {
            throw ApiException.invalid("max_completion_tokens", "max_tokens_too_small", "a complete output valid for "
                    + param + " needs at least " + needed + " completion tokens; max_tokens is " + maxTokens);
        }
        boolean keepSpecial = format != null && format.markerIsSpecial();
        return new Plan(new OutputRules(constraint, gate, keepSpecial), format, reasoning, openThink,
                chat.callForced(), parallel);
    }

    private TokenConstraint constraint(String key, Supplier<Grammar> grammar) {
        synchronized (cache) {
            TokenConstraint c = cache.get(key);
            if (c != null) {
                return c;
            }
        }
        TokenConstraint c = new TokenConstraint(grammar.get(), vocabulary());
        synchronized (cache) {
            cache.putIfAbsent(key, c);
            return cache.get(key);
        }
    }

    private Vocabulary vocabulary() {
        Vocabulary v = vocabulary;
        if (v == null) {
            synchronized (this) {
                v = vocabulary;
                if (v == null) {
                    try {
                        v = new Vocabulary(TokenBytes.load(model.dir(), model.config().vocabSize()));
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                    vocabulary = v;
                }
            }
        }
        return v;
    }
}
