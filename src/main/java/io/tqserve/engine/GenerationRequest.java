package io.tqserve.engine;

import io.tqserve.kv.store.KvSnapshot;
import io.tqserve.kv.store.PromptCache;
import java.util.function.Consumer;

/**
 * A tokenized request for a lane.
 *
 * @param promptTokens the prompt, at least one token
 * @param params       sampling and stopping
 * @param resumeFrom   a KV snapshot whose tokens start the prompt: restored instead of prefilled (or null)
 * @param capture      when set, the lane prefills the prompt, hands a snapshot of the cache (with the next-token
 *                     logits) to this consumer on its own thread, and finishes without generating (or null)
 * @param cacheNamespace the prompt-cache namespace the request reads and fills ({@code PromptCache.SHARED} = "",
 *                     or 32 hex characters): prefixes cached by other namespaces are never reused
 * @param output       constraint and special-token handling of the output
 * @param speculative  the lane may verify prompt-lookup drafts for this request (the output is the same either way;
 *                     false opts out)
 */
public record GenerationRequest(int[] promptTokens, SamplingParams params, KvSnapshot resumeFrom,
        Consumer<KvSnapshot> capture, String cacheNamespace, OutputRules output, boolean speculative) {
    public GenerationRequest {
        output = output == null ? OutputRules.NONE : output;
        if (output.constraint() != null && params.ignoreEos()) {
            throw new IllegalArgumentException("ignore_eos cannot be combined with a constrained output");
        }
        if (!PromptCache.validNamespace(cacheNamespace)) {
            throw new IllegalArgumentException("invalid prompt-cache namespace");
        }
        if (promptTokens == null || promptTokens.length == 0) {
            throw new IllegalArgumentException("the prompt is empty");
        }
        if (resumeFrom != null) {
            int[] prefix = resumeFrom.tokens();
            if (prefix.length > promptTokens.length
                    || !java.util.Arrays.equals(prefix, 0, prefix.length, promptTokens, 0, prefix.length)) {
                throw new IllegalArgumentException("the prompt does not start with the snapshot's tokens");
            }
        }
    }

    /** Speculation allowed. */
    public GenerationRequest(int[] promptTokens, SamplingParams params, KvSnapshot resumeFrom,
            Consumer<KvSnapshot> capture, String cacheNamespace, OutputRules output) {
        this(promptTokens, params, resumeFrom, capture, cacheNamespace, output, true);
    }

    /** Free output. */
    public GenerationRequest(int[] promptTokens, SamplingParams params, KvSnapshot resumeFrom,
            Consumer<KvSnapshot> capture, String cacheNamespace) {
        this(promptTokens, params, resumeFrom, capture, cacheNamespace, OutputRules.NONE);
    }

    /** In the shared prompt-cache namespace. */
    public GenerationRequest(int[] promptTokens, SamplingParams params, KvSnapshot resumeFrom,
            Consumer<KvSnapshot> capture, OutputRules output) {
        this(promptTokens, params, resumeFrom, capture, PromptCache.SHARED, output);
    }

    /** In the shared prompt-cache namespace, free output. */
    public GenerationRequest(int[] promptTokens, SamplingParams params, KvSnapshot resumeFrom,
            Consumer<KvSnapshot> capture) {
        this(promptTokens, params, resumeFrom, capture, PromptCache.SHARED, OutputRules.NONE);
    }

    public GenerationRequest(int[] promptTokens, SamplingParams params) {
        this(promptTokens, params, null, null);
    }

    /** This request in another prompt-cache namespace. */
    public GenerationRequest withCacheNamespace(String namespace) {
        return new GenerationRequest(promptTokens, params, resumeFrom, capture, namespace, output, speculative);
    }

    /** This request with prompt-lookup speculation allowed or not. */
    public GenerationRequest withSpeculative(boolean allowed) {
        return new GenerationRequest(promptTokens, params, resumeFrom, capture, cacheNamespace, output, allowed);
    }

    /** Tokens this request may hold in its KV cache at worst: prompt + max_tokens. */
    public int worstCaseTokens() {
        return promptTokens.length + params.maxTokens();
    }
}
