package io.tqserve.engine;

import java.util.List;

/** What a lane publishes for one sequence: tokens, then exactly one {@link Finished} or {@link Failed}. */
public sealed interface GenerationEvent permits GenerationEvent.Started, GenerationEvent.Token,
        GenerationEvent.Finished, GenerationEvent.Failed {

    /**
     * The lane took the sequence (left the queue) and begins its prefill.
     *
     * @param cachedTokens prompt tokens reused from a cached prefix (not prefilled again)
     */
    record Started(int cachedTokens) implements GenerationEvent {
    }

    /**
     * One generated token.
     *
     * @param tokenId  the token
     * @param text     text safe to emit now (may be "" while a UTF-8 character or a possible stop string is held)
     * @param logprob  log-probability of the token, or NaN when not requested
     * @param top      the most likely alternatives when requested, else empty
     */
    record Token(int tokenId, String text, float logprob, List<TopLogprob> top) implements GenerationEvent {
    }

    /** An alternative token and its log-probability. */
    record TopLogprob(int tokenId, String text, float logprob) {
    }

    /**
     * The sequence ended normally or was cancelled.
     *
     * @param reason           stop, length or cancelled
     * @param trailingText     text released at the end (held-back text flushed), possibly ""
     * @param promptTokens     prompt tokens
     * @param completionTokens generated tokens
     * @param cachedTokens     prompt tokens served from a cached prefix
     * @param stopSequence     the stop string that ended the text, or null (end of sequence, length, cancelled)
     */
    record Finished(FinishReason reason, String trailingText, int promptTokens, int completionTokens,
            int cachedTokens, String stopSequence) implements GenerationEvent {
        /** Not ended by a stop string. */
        public Finished(FinishReason reason, String trailingText, int promptTokens, int completionTokens,
                int cachedTokens) {
            this(reason, trailingText, promptTokens, completionTokens, cachedTokens, null);
        }
    }

    /**
     * The sequence failed; the lane goes on serving the others.
     *
     * @param message  what went wrong, safe to show a client
     * @param type     OpenAI-style error type (e.g. "server_error", "timeout")
     */
    record Failed(String message, String type) implements GenerationEvent {
        /**
         * The type of a sequence whose constraint exceeded a mask budget mid-generation (the schema's cost, not the
         * server's fault): answered as a 400 {@code schema_too_complex}.
         */
        public static final String SCHEMA_TOO_COMPLEX = "schema_too_complex";
    }
}
