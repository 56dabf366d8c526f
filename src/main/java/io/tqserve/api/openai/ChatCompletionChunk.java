package io.tqserve.api.openai;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.List;

/** One SSE event of a streamed chat completion ({@code object: "chat.completion.chunk"}). */
public record ChatCompletionChunk(String id, String object, long created, String model, String systemFingerprint,
        List<Choice> choices, @JsonInclude(JsonInclude.Include.NON_NULL) Usage usage) {

    public ChatCompletionChunk(String id, long created, String model, String systemFingerprint, List<Choice> choices,
            Usage usage) {
        this(id, "chat.completion.chunk", created, model, systemFingerprint, choices, usage);
    }

    /** A choice of a chunk: a delta, its logprobs (or null) and the finish reason on the last one (else null). */
    public record Choice(int index, Delta delta, ChatLogprobs logprobs, String finishReason) {
    }

    /** The new part of the message; role only in the first chunk. Absent fields are omitted. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Delta(String role, String content, String reasoningContent, List<ToolCallWire> toolCalls) {

        public Delta(String role, String content) {
            this(role, content, null, null);
        }
    }
}
