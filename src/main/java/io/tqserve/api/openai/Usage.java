package io.tqserve.api.openai;

/** Token counts of a request. */
public record Usage(int promptTokens, int completionTokens, int totalTokens) {
    public static Usage of(int prompt, int completion) {
        return new Usage(prompt, completion, prompt + completion);
    }
}
