package io.tqserve.api;

import io.tqserve.engine.Lane;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A validated generation request, before tokenization. Sampling fields are null where the request left them
 * out (the model's generation_config.json or OpenAI's defaults apply).
 *
 * @param endpoint         chat or completion
 * @param model            the requested model id, or null
 * @param promptText       the completion prompt as text, or null
 * @param promptIds        the completion prompt as token ids, or null
 * @param maxTokens        max_tokens / max_completion_tokens, or null
 * @param temperature      or null
 * @param topP             or null
 * @param topK             or null (0 = off)
 * @param minP             0 = off
 * @param seed             or null
 * @param presencePenalty  0 = off
 * @param frequencyPenalty 0 = off
 * @param repetitionPenalty or null
 * @param logitBias        token id to bias
 * @param stop             stop strings
 * @param stream           SSE
 * @param includeUsage     stream_options.include_usage
 * @param topLogprobs      -1 = no logprobs, else alternatives per token
 * @param echo             completions: prepend the prompt
 * @param ignoreEos        keep generating past end-of-sequence (vLLM extension)
 * @param lane             the lane the request asked for
 * @param kvSnapshot       completions: id of a KV snapshot to continue from ({@code tqserve_kv_snapshot}), or null
 * @param chat             chat only: the conversation, tools, tool_choice, response_format (else null)
 */
public record ParsedRequest(Endpoint endpoint, String model, String promptText,
        int[] promptIds, Integer maxTokens, Float temperature, Float topP, Integer topK, float minP, Long seed,
        float presencePenalty, float frequencyPenalty, Float repetitionPenalty, Map<Integer, Float> logitBias,
        List<String> stop, boolean stream, boolean includeUsage, int topLogprobs, boolean echo, boolean ignoreEos,
        Optional<Lane.Kind> lane, String kvSnapshot, ChatRequest chat) {

    public ParsedRequest(Endpoint endpoint, String model, String promptText,
            int[] promptIds, Integer maxTokens, Float temperature, Float topP, Integer topK, float minP, Long seed,
            float presencePenalty, float frequencyPenalty, Float repetitionPenalty, Map<Integer, Float> logitBias,
            List<String> stop, boolean stream, boolean includeUsage, int topLogprobs, boolean echo, boolean ignoreEos,
            Optional<Lane.Kind> lane, String kvSnapshot) {
        this(endpoint, model, promptText, promptIds, maxTokens, temperature, topP, topK, minP, seed,
                presencePenalty, frequencyPenalty, repetitionPenalty, logitBias, stop, stream, includeUsage,
                topLogprobs, echo, ignoreEos, lane, kvSnapshot, null);
    }

    /** The request field that holds the prompt, for error messages. */
    public String promptParam() {
        return endpoint == Endpoint.CHAT ? "messages" : "prompt";
    }

    public boolean logprobs() {
        return topLogprobs >= 0;
    }
}
