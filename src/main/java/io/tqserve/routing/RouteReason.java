package io.tqserve.routing;

/** Why a request went to its lane; the wire names appear in X-Tqserve-Route-Reason and the decisions metric. */
public enum RouteReason {
    /** Worst-case context above the long-context threshold: the memory-lean turbo lane. */
    LONG_CONTEXT("long-context"),
    /** Worst-case context at or below the threshold: the throughput-oriented batched lane. */
    SHORT_CONTEXT("short-context"),
    /** The request named its lane ({@code tqserve_lane} or the X-Tqserve-Lane header). */
    OVERRIDE("override"),
    /**
     * The preferred lane could not start the request at its next step (no free slot or KV budget) and the other
     * lane could.
     */
    BUDGET_FALLBACK("budget-fallback"),
    /** Only one lane takes requests: one lane is enabled, or the policy pins one. */
    ONLY_LANE("only-lane");

    private final String wire;

    RouteReason(String wire) {
        this.wire = wire;
    }

    public String wireName() {
        return wire;
    }
}
