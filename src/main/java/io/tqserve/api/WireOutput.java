package io.tqserve.api;

import io.tqserve.engine.GenerationEvent;
import io.tqserve.toolcall.ChatOutputParser;
import java.util.List;
import org.springframework.http.HttpStatus;

/**
 * The answer side of a protocol translated into chat requests (the Responses API, Anthropic's Messages API): the
 * SSE frames of one streamed response, or its one JSON body. Frames are complete SSE events (each ends with a
 * blank line). One per response, called in order, not thread-safe.
 */
public interface WireOutput {
    /** Frames sent before any token. */
    List<String> start();

    /** Frames for one engine event ({@link GenerationEvent.Failed} goes to {@link #failure} instead). */
    List<String> on(GenerationEvent event);

    /** The frames of a stream that failed after it started (the stream ends after them). */
    List<String> failure(ApiException error);

    /** The frame sent when nothing else was sent for a keep-alive interval. */
    String keepAlive();

    /** The JSON body of a non-streamed response, from all the events of a sequence that finished. */
    String body(List<GenerationEvent> events);

    /**
     * The pieces of generated {@code text} as the chat path splits them: the {@code parser}'s (reasoning, content,
     * tool calls), or all content when there is none.
     */
    static List<ChatOutputParser.Piece> pieces(ChatOutputParser parser, String text) {
        if (parser != null) {
            return parser.feed(text);
        }
        return text.isEmpty() ? List.of() : List.of(new ChatOutputParser.Content(text));
    }

    /** The event that ended a finished sequence's events; a 500 if there is none (the sequence never finished). */
    static GenerationEvent.Finished finished(List<GenerationEvent> events) {
        for (int i = events.size() - 1; i >= 0; i--) {
            if (events.get(i) instanceof GenerationEvent.Finished f) {
                return f;
            }
        }
        throw new ApiException(HttpStatus.INTERNAL_SERVER_ERROR, "server_error", null, null,
                "the sequence ended without a result", null);
    }
}
