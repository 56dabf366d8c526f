package io.tqserve.routing;

import io.tqserve.engine.Lane;

/**
 * Told about each request's path through the server, for metrics. Every method is called at most once per
 * request except {@link #interToken}; implementations must be quick and must not throw.
 */
public interface RequestObserver {
    RequestObserver NONE = new RequestObserver() {
    };

    /** The routing service chose a lane. */
    default void routed(RouteDecision decision) {
    }

    /**
     * A request of an API endpoint ({@code chat}, {@code completions}, {@code responses}, {@code messages}) was
     * routed to {@code lane} and submitted.
     */
    default void endpoint(Lane.Kind lane, String endpoint) {
    }

    /** The lane took the request off its queue after {@code queueNanos}. */
    default void started(Lane.Kind lane, long queueNanos) {
    }

    /** The first token reached the client {@code ttftNanos} after the request arrived. */
    default void firstToken(Lane.Kind lane, long ttftNanos) {
    }

    /** A token followed the previous one after {@code nanos}. */
    default void interToken(Lane.Kind lane, long nanos) {
    }

    /** The response ended (normally, with an error, or by cancellation) {@code e2eNanos} after arrival. */
    default void completed(Lane.Kind lane, long e2eNanos) {
    }
}
