package io.tqserve.routing;

import io.tqserve.engine.Lane;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Chooses a lane for each request. In the {@link RoutingPolicy#AUTO auto} policy a request whose worst-case
 * context (prompt + max_tokens) exceeds the long-context threshold goes to the turbo lane (memory), the rest to
 * the batched lane (throughput); when the chosen lane's KV budget cannot admit it (ever, or right now) and the
 * other lane's can, it goes there. A request override wins when its lane is enabled and could ever hold it. With
 * only one lane enabled, or a policy that pins one, every request goes to that lane.
 *
 * <p>Admission itself stays with the lanes: a request the chosen lane cannot admit right now waits in its
 * bounded queue; a full queue is the lane's {@code LaneRejectedException}.
 */
public final class RoutingService {
    private final RoutingPolicy policy;
    private final int longContextThreshold;
    private final Map<Lane.Kind, Lane> lanes;
    private final RequestObserver observer;

    /**
     * @param lanes the enabled lanes (at least one, at most one per kind)
     */
    public RoutingService(RoutingPolicy policy, int longContextThreshold, Collection<? extends Lane> lanes,
            RequestObserver observer) {
        if (lanes.isEmpty()) {
            throw new IllegalArgumentException("at least one lane must be enabled");
        }
        if (longContextThreshold < 1) {
            throw new IllegalArgumentException("the long-context threshold must be >= 1");
        }
        Map<Lane.Kind, Lane> byKind = new EnumMap<>(Lane.Kind.class);
        for (Lane l : lanes) {
            if (byKind.put(l.kind(), l) != null) {
                throw new IllegalArgumentException("two " + l.kind().wireName() + " lanes");
            }
        }
        if (policy == RoutingPolicy.TURBO && !byKind.containsKey(Lane.Kind.TURBO)
                || policy == RoutingPolicy.BATCHED && !byKind.containsKey(Lane.Kind.BATCHED)) {
            throw new IllegalArgumentException("the routing policy " + policy + " needs its lane enabled");
        }
        this.policy = policy;
        this.longContextThreshold = longContextThreshold;
        this.lanes = Collections.unmodifiableMap(byKind);
        this.observer = observer == null ? RequestObserver.NONE : observer;
    }

    public RoutingPolicy policy() {
        return policy;
    }

    public int longContextThreshold() {
        return longContextThreshold;
    }

    /** Where request timings go (the same observer that hears the decisions). */
    public RequestObserver observer() {
        return observer;
    }

    /** The enabled lanes. */
    public Collection<Lane> lanes() {
        return lanes.values();
    }

    public Optional<Lane> lane(Lane.Kind kind) {
        return Optional.ofNullable(lanes.get(kind));
    }

    /**
     * Decides the lane for a request and reports the decision to the observer.
     *
     * @throws NoLaneFitsException when no enabled lane's KV budget could ever hold the request
     */
    public RouteDecision route(RouteRequest request) {
        RouteDecision d = decide(request);
        observer.routed(d);
        return d;
    }

    private RouteDecision decide(RouteRequest request) {
        int worst = request.worstCaseTokens();
        if (request.override().isPresent()) {
            Lane asked = lanes.get(request.override().get());
            if (asked != null && asked.canEverAdmit(worst)) {
                return new RouteDecision(asked, RouteReason.OVERRIDE);
            }
            // The named lane is disabled or too small for this request: route as if it had not asked.
        }
        List<Lane> fitting = new ArrayList<>(2);
        for (Lane l : lanes.values()) {
            if (l.canEverAdmit(worst)) {
                fitting.add(l);
            }
        }
        if (lanes.size() == 1 || policy != RoutingPolicy.AUTO) {
            Lane only = lanes.size() == 1 ? lanes.values().iterator().next()
                    : lanes.get(policy == RoutingPolicy.TURBO ? Lane.Kind.TURBO : Lane.Kind.BATCHED);
            if (!fitting.contains(only)) {
                throw tooLarge(worst);
            }
            return new RouteDecision(only, RouteReason.ONLY_LANE);
        }
        if (fitting.isEmpty()) {
            throw tooLarge(worst);
        }
        boolean longContext = worst > longContextThreshold;
        Lane preferred = lanes.get(longContext ? Lane.Kind.TURBO : Lane.Kind.BATCHED);
        Lane other = lanes.get(longContext ? Lane.Kind.BATCHED : Lane.Kind.TURBO);
        if (!fitting.contains(preferred)
                || !preferred.canAdmitNow(worst) && other.canAdmitNow(worst)) {
            return new RouteDecision(other, RouteReason.BUDGET_FALLBACK);
        }
        return new RouteDecision(preferred, longContext ? RouteReason.LONG_CONTEXT : RouteReason.SHORT_CONTEXT);
    }

    private NoLaneFitsException tooLarge(int worst) {
        StringBuilder sb = new StringBuilder("the request may need " + worst
                + " tokens of KV cache (prompt + max_tokens), more than any lane's KV budget holds (");
        String sep = "";
        for (Lane l : lanes.values()) {
            sb.append(sep).append(l.kind().wireName()).append(": ")
                    .append(l.kvBytesBudget() / l.layout().bytesPerToken()).append(" tokens");
            sep = ", ";
        }
        return new NoLaneFitsException(sb.append("); lower max_tokens or shorten the prompt").toString());
    }
}
