package io.tqserve.engine;

/** A lane refused a request: queue full (retry later), closed, or too large for its KV budget. */
public final class LaneRejectedException extends RuntimeException {

    /** Why. */
    public enum Reason {
        QUEUE_FULL, CLOSED, TOO_LARGE
    }

    private final Reason reason;

    public LaneRejectedException(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
