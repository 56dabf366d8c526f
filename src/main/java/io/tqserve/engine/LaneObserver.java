package io.tqserve.engine;

/**
 * Told when a sequence leaves a lane (finished, failed, or cancelled — also while still queued). Called on the
 * lane's thread after the sequence's KV memory was freed, so {@link Lane#kvBytesUsed()} no longer counts it.
 * Implementations must be quick and must not throw; metrics use it.
 */
@FunctionalInterface
public interface LaneObserver {
    LaneObserver NONE = (lane, reason, promptTokens, completionTokens) -> {
    };

    /**
     * @param lane             the lane the sequence ran on
     * @param reason           how it ended ({@link FinishReason#ERROR} for a failure)
     * @param promptTokens     its prompt tokens
     * @param completionTokens tokens it generated
     */
    void sequenceEnded(Lane lane, FinishReason reason, int promptTokens, int completionTokens);
}
