package io.tqserve.api.openai;

import com.fasterxml.jackson.annotation.JsonInclude;
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

    /**
     * The assistant's message; refusal is always null. content is null when the message only calls tools;
     * reasoning_content (a reasoning model's thinking) and tool_calls are omitted when absent.
     */
    public record Message(String role, String content, String refusal,
            @JsonInclude(JsonInclude.Include.NON_NULL) String reasoningContent,
            @JsonInclude(JsonInclude.Include.NON_EMPTY) List<ToolCallWire> toolCalls) {

        public Message(String role, String content, String refusal) {
            this(role, content, refusal, null, null);
        }
    }
}
