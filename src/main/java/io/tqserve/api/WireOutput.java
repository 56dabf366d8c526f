package io.tqserve.api;

import io.tqserve.engine.GenerationEvent;
import java.util.List;

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
}
