package io.tqserve.routing;

/** How requests are spread over the lanes ({@code tqserve.routing.policy}). */
public enum RoutingPolicy {
    /** Long worst-case contexts to the turbo lane, the rest to the batched lane, with budget fallback. */
    AUTO,
    /** Everything to the turbo lane (unless a request overrides). */
    TURBO,
    /** Everything to the batched lane (unless a request overrides). */
    BATCHED
}
