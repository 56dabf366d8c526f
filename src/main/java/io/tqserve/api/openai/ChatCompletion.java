package io.tqserve.api.openai;

import java.util.List;

/** A non-streamed chat completion ({@code object: "chat.completion"}). */
public record ChatCompletion(String id, String object, long created, String model, String systemFingerprint,
        List<Choice> choices, Usage usage) {

    public ChatCompletion(String id, long created, String model, String systemFingerprint, List<Choice> choices,
            Usage usage) {
        this(id, "chat.completion", created, model, systemFingerprint, choices, usage);
    }

    public record Choice(int index, Message message, ChatLogprobs logprobs, String finishReason) {
    }

    /** The assistant's message; refusal is always null. */
    public record Message(String role, String content, String refusal) {
    }
}
