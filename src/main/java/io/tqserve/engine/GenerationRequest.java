package io.tqserve.engine;

/**
 * A tokenized request for a lane.
 *
 * @param promptTokens the prompt, at least one token
 * @param params       sampling and stopping
 */
public record GenerationRequest(int[] promptTokens, SamplingParams params) {
    public GenerationRequest {
        if (promptTokens == null || promptTokens.length == 0) {
            throw new IllegalArgumentException("the prompt is empty");
        }
    }

    /** Tokens this request may hold in its KV cache at worst: prompt + max_tokens. */
    public int worstCaseTokens() {
        return promptTokens.length + params.maxTokens();
    }
}
