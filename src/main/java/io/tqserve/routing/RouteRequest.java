package io.tqserve.routing;

import io.tqserve.engine.Lane;
import java.util.Optional;

/**
 * What routing needs to know of a request.
 *
 * @param worstCaseTokens prompt tokens + max_tokens: the most KV the request may hold
 * @param override        the lane the request asked for, if any ({@code tqserve_lane} / X-Tqserve-Lane)
 */
public record RouteRequest(int worstCaseTokens, Optional<Lane.Kind> override) {
    public RouteRequest {
        if (worstCaseTokens < 1) {
            throw new IllegalArgumentException("worstCaseTokens must be >= 1");
        }
        override = override == null ? Optional.empty() : override;
    }
}
