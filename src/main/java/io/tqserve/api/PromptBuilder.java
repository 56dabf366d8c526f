package io.tqserve.api;

import io.tqserve.engine.GenerationRequest;
import io.tqserve.engine.ReasoningBudget;
import io.tqserve.engine.SamplingParams;
import io.tqserve.model.GenerationConfig;
import io.tqserve.model.Model;
import io.tqserve.toolcall.ChatFormat;

/**
 * Turns a parsed request into token ids and sampling parameters: renders the chat template, tokenizes, checks the
 * context length, and fills sampling defaults (the request's value, else the model's generation_config.json,
 * else OpenAI's). Runs off the event loop: templates and tokenizers can be slow on long prompts.
 */
final class PromptBuilder {
    /** OpenAI's default max_tokens of the legacy completions endpoint. */
    static final int COMPLETION_DEFAULT_MAX_TOKENS = 16;

    /**
     * A request ready for a lane.
     *
     * @param request   the parsed request
     * @param echoText  the prompt as text (completions with echo), else ""
     * @param generation the tokenized request
     * @param plan       what the output needs; its constraint may still have to be compiled
     *                   ({@link StructuredOutput#constrain}, then {@link #with})
     */
    record Prepared(ParsedRequest request, String echoText, GenerationRequest generation,
            StructuredOutput.Plan plan) {
        /** The same request reading and filling another prompt-cache namespace. */
        Prepared withCacheNamespace(String namespace) {
            return new Prepared(request, echoText, generation.withCacheNamespace(namespace), plan);
        }

        Prepared withSpeculative(boolean allowed) {
            return new Prepared(request, echoText, generation.withSpeculative(allowed), plan);
        }

        /** The same request under a plan whose constraint is compiled. */
        Prepared with(StructuredOutput.Plan compiled) {
            GenerationRequest g = generation;
            return new Prepared(request, echoText, new GenerationRequest(g.promptTokens(), g.params(), g.resumeFrom(),
                    g.capture(), g.cacheNamespace(), compiled.rules(), g.speculative()), compiled);
        }
    }

    private final Model model;
    private final int defaultMaxTokens;
    private final StructuredOutput structured;
    private final ApiSettings settings;

    PromptBuilder(StructuredOutput structured, ApiSettings settings) {
        this.model = structured.model();
        this.defaultMaxTokens = settings.defaultMaxTokens();
        this.structured = structured;
        this.settings = settings;
    }

    StructuredOutput structured() {
        return structured;
    }

    Prepared prepare(ParsedRequest r) {
        return prepare(r, null);
    }

    /** As {@link #prepare(ParsedRequest)}, the prompt appended to a KV snapshot's tokens when one is given. */
    Prepared prepare(ParsedRequest r, io.tqserve.kv.store.KvSnapshot prefix) {
        int[] ids;
        String echo = "";
        String rendered = null;
        if (r.endpoint() == Endpoint.CHAT) {
            ChatFormat.Prompt prompt = ChatFormats.render(ChatFormats.of(model), r.chat(), true, settings);
            rendered = prompt.text();
            ids = prompt.tokens();
        } else if (r.promptIds() != null) {
            ids = r.promptIds();
            if (r.echo()) {
                echo = model.tokenizer().decode(ids);
            }
        } else {
            ids = model.tokenizer().encode(r.promptText());
            echo = r.echo() ? r.promptText() : "";
        }
        if (prefix != null) {
            int[] all = java.util.Arrays.copyOf(prefix.tokens(), prefix.tokens().length + ids.length);
            System.arraycopy(ids, 0, all, prefix.tokens().length, ids.length);
            ids = all;
        }
        int context = model.config().maxPositions();
        if (ids.length == 0) {
            throw ApiException.invalid(r.promptParam(), "the prompt has no tokens");
        }
        if (ids.length >= context) {
            throw ApiException.invalid(r.promptParam(), "context_length_exceeded", "This model's maximum context length"
                    + " is " + context + " tokens. However, your " + r.promptParam() + " resulted in " + ids.length
                    + " tokens, leaving no room for the completion.");
        }
        int maxTokens;
        if (r.maxTokens() != null) {
            maxTokens = r.maxTokens();
            if (maxTokens > context - ids.length) { // not ids.length + maxTokens: that overflows for huge values
                throw ApiException.invalid(r.endpoint() == Endpoint.CHAT ? "max_completion_tokens" : "max_tokens",
                        "context_length_exceeded", "This model's maximum context length is " + context + " tokens. "
                                + "However, you requested " + ((long) ids.length + maxTokens) + " tokens (" + ids.length
                                + " in the " + r.promptParam() + ", " + maxTokens + " in the completion). Please "
                                + "reduce the length of the " + r.promptParam() + " or the completion.");
            }
        } else {
            int def = r.endpoint() == Endpoint.CHAT ? defaultMaxTokens : COMPLETION_DEFAULT_MAX_TOKENS;
            maxTokens = Math.min(def, context - ids.length);
        }
        GenerationConfig g = model.generation();
        float temperature = r.temperature() != null ? r.temperature() : g.temperature() != null ? g.temperature() : 1f;
        float topP = r.topP() != null ? r.topP() : g.topP() != null ? g.topP() : 1f;
        int topK = r.topK() != null ? r.topK() : g.topK() != null ? g.topK() : 0;
        float repetition = r.repetitionPenalty() != null ? r.repetitionPenalty()
                : g.repetitionPenalty() != null ? g.repetitionPenalty() : 1f;
        SamplingParams params = new SamplingParams(temperature, topK, topP, r.minP(), r.seed(), repetition,
                r.presencePenalty(), r.frequencyPenalty(), r.logitBias(), maxTokens, r.stop(), r.ignoreEos(),
                r.topLogprobs());
        StructuredOutput.Plan plan = rendered == null ? StructuredOutput.Plan.NONE
                : structured.plan(r, rendered);
        if (rendered != null && r.chat().thinkingBudget() != null) {
            plan = plan.withRules(plan.rules().withReasoningBudget(reasoningBudget(r.chat().thinkingBudget(),
                    rendered)));
        }
        if (plan.pending() != null && r.ignoreEos()) {
            throw ApiException.invalid("ignore_eos", "ignore_eos cannot be combined with response_format or tools");
        }
        return new Prepared(r, echo, new GenerationRequest(ids, params, prefix, null, plan.rules()), plan);
    }

    /**
     * The thinking_token_budget of a chat request: the template's end-of-reasoning marker is forced after that many
     * tokens when the model reasons first; nothing when the prompt already closed reasoning. A 400 for a template
     * without reasoning markers.
     */
    private ReasoningBudget reasoningBudget(int budget, String prompt) {
        ChatFormat format = ChatFormats.of(model);
        if (format.reasoning().isEmpty()) {
            throw ApiException.invalid("thinking_token_budget", "thinking_token_budget needs a model whose chat "
                    + "template reasons in marked blocks (such as <think>...</think>); the served model's does not");
        }
        return format.reasonsFirst(prompt) ? new ReasoningBudget(budget, format.reasoningEndTokens()) : null;
    }
}
