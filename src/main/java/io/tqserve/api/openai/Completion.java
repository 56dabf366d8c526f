package io.tqserve.api.openai;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.List;

/**
 * A legacy completion ({@code object: "text_completion"}); streamed chunks have the same shape, with usage only
 * on the final usage chunk.
 */
public record Completion(String id, String object, long created, String model, String systemFingerprint,
        List<Choice> choices, @JsonInclude(JsonInclude.Include.NON_NULL) Usage usage) {

    public Completion(String id, long created, String model, String systemFingerprint, List<Choice> choices,
            Usage usage) {
        this(id, "text_completion", created, model, systemFingerprint, choices, usage);
    }

    public record Choice(String text, int index, CompletionLogprobs logprobs, String finishReason) {
    }
}
