package io.tqserve.backend;

import java.util.Map;

/**
 * How a device sampler picks tokens; the same parameters and semantics as the engine's Java sampler:
 * repetition penalty (Hugging Face style, over prompt and output), presence and frequency penalties (OpenAI style,
 * over output), logit bias, then greedy (temperature 0) or temperature + top-k + top-p + min-p.
 *
 * @param seed         the PRNG seed: equal seeds give equal tokens
 * @param topLogprobs  -1 = no logprobs; else the chosen token's logprob and this many alternatives
 * @param promptTokens the prompt, for the repetition penalty
 */
public record SamplingSpec(float temperature, int topK, float topP, float minP, long seed, float repetitionPenalty,
        float presencePenalty, float frequencyPenalty, Map<Integer, Float> logitBias, int topLogprobs,
        int[] promptTokens) {
    public SamplingSpec {
        logitBias = Map.copyOf(logitBias);
    }

    public boolean greedy() {
        return temperature == 0f;
    }

    public boolean penalties() {
        return repetitionPenalty != 1f || presencePenalty != 0f || frequencyPenalty != 0f;
    }
}
