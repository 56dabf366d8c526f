package io.tqserve.routing;

import io.tqserve.engine.Lane;

/**
 * Where a request goes and why.
 *
 * @param lane   the lane to submit to
 * @param reason why this lane
 */
public record RouteDecision(Lane lane, RouteReason reason) {
}
