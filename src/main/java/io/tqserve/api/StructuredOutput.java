package io.tqserve.api;

import io.tqserve.api.openai.Wire;
import io.tqserve.constraint.ConstraintLimits;
import io.tqserve.constraint.Grammar;
import io.tqserve.constraint.SchemaCompiler;
import io.tqserve.constraint.TokenConstraint;
import io.tqserve.constraint.Vocabulary;
import io.tqserve.engine.OutputRules;
import io.tqserve.model.Model;
import io.tqserve.toolcall.ChatFormat;
import io.tqserve.toolcall.ChatOutputParser;
import io.tqserve.toolcall.ToolCallFormat;
import io.tqserve.toolcall.ToolSpec;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
import reactor.core.publisher.Mono;

/**
 * What a chat request asks of its output beyond free text, for one served model: the constraint (response_format,
 * a forced or possible tool call), read with the model's {@link ChatFormat} (tool-call entry, reasoning markers and
 * the token that ends reasoning). {@link #plan} decides this cheaply on the request thread; {@link #constrain} gets
 * the compiled constraint from the per-tenant {@link ConstraintCache} or a compile on the {@link ConstraintPool}
 * without holding a thread, and {@link #admit} keeps it once the request is admitted to a lane.
 */
final class StructuredOutput {
    /**
     * How to shape and read one response.
     *
     * @param rules             the lane's output rules
     * @param format            the template's tool-call format when tools are active, else null
     * @param reasoning         the template's reasoning markers, or null
     * @param startsInReasoning the prompt ends in an open reasoning block
     * @param callForced        tool_choice required or named
     * @param parallel          several calls may be made (parallel_tool_calls and no named function)
     * @param pending           the constraint the output needs (compiled or not yet), or null for free text
     */
    record Plan(OutputRules rules, ToolCallFormat format, ChatFormat.Reasoning reasoning, boolean startsInReasoning,
            boolean callForced, boolean parallel, Pending pending) {
        static final Plan NONE = new Plan(OutputRules.NONE, null, null, false, false, true, null);

        /** The same plan with other output rules. */
        Plan withRules(OutputRules other) {
            return new Plan(other, format, reasoning, startsInReasoning, callForced, parallel, pending);
        }

        /** A constraint is needed and not compiled yet. */
        boolean awaitsConstraint() {
            return pending != null && rules.constraint() == null;
        }

        /** The same plan with its constraint compiled. */
        Plan with(TokenConstraint constraint) {
            return withRules(new OutputRules(constraint, pending.gate(), rules.keepSpecialTokens(),
                    rules.reasoningBudget()));
        }

        /** A parser for the generated text, or null when the text is the content as it is. */
        ChatOutputParser parser() {
            return format == null && reasoning == null ? null
                    : new ChatOutputParser(format, reasoning, startsInReasoning, callForced, parallel);
        }
    }

    /**
     * A constraint to compile.
     *
     * @param param   the request parameter it comes from (response_format or tools)
     * @param key     its canonical cache key (without the tenant)
     * @param compile builds it (on a compile thread)
     * @param gate    the token before which sampling is free (the token that ends reasoning), or -1
     */
    record Pending(String param, String key, Callable<TokenConstraint> compile, int gate) {
    }

    private final Model model;
    private volatile Vocabulary vocabulary;
    private final ConstraintCache cache;
    private final ConstraintLimits limits;

    /** With a compile pool of default settings (tests, tools). */
    StructuredOutput(Model model) {
        this(model, ConstraintPool.standalone());
    }

    StructuredOutput(Model model, ConstraintPool pool) {
        this.model = model;
        this.cache = new ConstraintCache(pool);
        this.limits = pool.settings().limits();
    }

    ConstraintCache cache() {
        return cache;
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

    /** What the request's output needs (cheap: nothing is compiled here). */
    Plan plan(ParsedRequest r, String prompt) {
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
            grammar = object ? () -> SchemaCompiler.anyObject(limits)
                    : () -> SchemaCompiler.compileForGeneration(chat.format().schema(), limits);
        } else if (format != null) {
            param = "tools";
            List<ToolSpec> tools = chat.namedTool() == null ? chat.toolSpecs()
                    : chat.toolSpecs().stream().filter(t -> t.name().equals(chat.namedTool())).toList();
            key = format + ":" + chat.callForced() + ":" + parallel + ":" + Wire.json(tools);
            boolean markerTokens = chatFormat.markerTokens();
            grammar = chat.callForced() ? () -> format.forcedCalls(tools, parallel, limits, markerTokens)
                    : () -> format.autoCalls(tools, parallel, limits, markerTokens);
        } else {
            return new Plan(OutputRules.NONE, null, reasoning, openThink, false, parallel, null);
        }
        int gate = -1;
        if (thinksFirst && chatFormat.reasoningEndToken().isPresent()) {
            gate = chatFormat.reasoningEndToken().getAsInt();
            Supplier<Grammar> inner = grammar;
            grammar = () -> Grammar.seq(Grammar.repeat(Grammar.literal("\n"), null, 0, 2), inner.get());
            key = "gated:" + key;
        }
        boolean keepSpecial = format != null && format.markerIsSpecial();
        Supplier<Grammar> language = grammar;
        Pending pending = new Pending(param, key, () -> new TokenConstraint(language.get(), vocabulary(), limits),
                gate);
        return new Plan(new OutputRules(null, gate, keepSpecial), format, reasoning, openThink, chat.callForced(),
                parallel, pending);
    }

    /**
     * The plan with its constraint compiled (from the tenant's cache, a compile in flight or a new one), or a 400
     * when the schema is refused or a complete output does not fit in {@code maxTokens}. Nothing is cached here:
     * see {@link #admit}.
     */
    Mono<Plan> constrain(Plan plan, String tenant, int maxTokens) {
        Pending p = plan.pending();
        return cache.get(new ConstraintCache.Key(tenant, p.key()), p.compile(), p.param()).map(constraint -> {
            int needed = constraint.minTokens() + (p.gate() >= 0 ? 1 : 0);
            if (needed > maxTokens) {
                throw ApiException.invalid("max_completion_tokens", "max_tokens_too_small", "a complete output valid"
                        + " for " + p.param() + " needs at least " + needed + " completion tokens; max_tokens is "
                        + maxTokens);
            }
            return plan.with(constraint);
        });
    }

    /** The request of this plan was admitted to a lane: its constraint may be cached for the tenant. */
    void admit(Plan plan, String tenant) {
        if (plan.pending() != null && plan.rules().constraint() != null) {
            cache.admit(new ConstraintCache.Key(tenant, plan.pending().key()), plan.rules().constraint());
        }
    }

    /** The request of this plan ended: the cached constraint's size is measured again. */
    void ended(Plan plan, String tenant) {
        if (plan.pending() != null) {
            cache.used(new ConstraintCache.Key(tenant, plan.pending().key()));
        }
    }

    private Vocabulary vocabulary() {
        Vocabulary v = vocabulary;
        if (v == null) {
            v = ConstraintVocabularies.of(model); // built at model load (ModelLoader), or here on first use
            vocabulary = v;
        }
        return v;
    }
}
