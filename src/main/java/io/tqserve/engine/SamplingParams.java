package io.tqserve.engine;

import java.util.List;
import java.util.Map;

/**
 * How to pick tokens, as a request asks. Every field works in every lane.
 *
 * @param temperature       0 = greedy
 * @param topK              0 = off
 * @param topP              1 = off
 * @param minP              0 = off; keep tokens with p ≥ minP·p_max
 * @param seed              null = random; equal seeds give equal output
 * @param repetitionPenalty 1 = off; Hugging Face style over prompt and output tokens
 * @param presencePenalty   0 = off; OpenAI style over output tokens
 * @param frequencyPenalty  0 = off; OpenAI style over output tokens
 * @param logitBias         token id to bias added to its logit
 * @param maxTokens         most tokens to generate
 * @param stop              stop strings, matched on decoded text and never emitted
 * @param ignoreEos         keep going past end-of-sequence ids
 * @param topLogprobs       -1 = no logprobs; else alternatives per token (0..20)
 */
public record SamplingParams(float temperature, int topK, float topP, float minP, Long seed,
        float repetitionPenalty, float presencePenalty, float frequencyPenalty, Map<Integer, Float> logitBias,
        int maxTokens, List<String> stop, boolean ignoreEos, int topLogprobs) {

    public SamplingParams {
        logitBias = logitBias == null ? Map.of() : Map.copyOf(logitBias);
        stop = stop == null ? List.of() : List.copyOf(stop);
        if (temperature < 0 || !Float.isFinite(temperature)) {
            throw new IllegalArgumentException("temperature must be >= 0");
        }
        if (!(topP > 0 && topP <= 1)) {
            throw new IllegalArgumentException("top_p must be in (0, 1]");
        }
        if (topK < 0) {
            throw new IllegalArgumentException("top_k must be >= 0");
        }
        if (!(minP >= 0 && minP <= 1)) {
            throw new IllegalArgumentException("min_p must be in [0, 1]");
        }
        if (!(repetitionPenalty > 0) || !Float.isFinite(repetitionPenalty)) {
            throw new IllegalArgumentException("repetition_penalty must be > 0");
        }
        if (maxTokens < 1) {
            throw new IllegalArgumentException("max_tokens must be >= 1");
        }
    }

    /** Greedy decoding of at most {@code maxTokens} tokens. */
    public static SamplingParams greedy(int maxTokens) {
        return new SamplingParams(0f, 0, 1f, 0f, null, 1f, 0f, 0f, Map.of(), maxTokens, List.of(), false, -1);
    }

    public SamplingParams withMaxTokens(int n) {
        return new SamplingParams(temperature, topK, topP, minP, seed, repetitionPenalty, presencePenalty,
                frequencyPenalty, logitBias, n, stop, ignoreEos, topLogprobs);
    }

    public boolean greedyDecoding() {
        return temperature == 0f;
    }
}
