package io.tqserve.api.openai;

/**
 * Token counts of a request, as OpenAI reports them.
 *
 * @param promptTokensDetails {@code cached_tokens}: prompt tokens served from the prompt (prefix) cache
 */
public record Usage(int promptTokens, int completionTokens, int totalTokens, PromptTokensDetails promptTokensDetails) {

    /** @param cachedTokens prompt tokens whose KV came from the prompt cache instead of a prefill */
    public record PromptTokensDetails(int cachedTokens) {
    }

    public static Usage of(int prompt, int completion, int cached) {
        return new Usage(prompt, completion, prompt + completion, new PromptTokensDetails(cached));
    }
}
