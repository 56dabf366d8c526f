package io.tqserve.routing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.engine.GenerationEvent;
import io.tqserve.engine.GenerationRequest;
import io.tqserve.engine.Lane;
import io.tqserve.kv.KvLayout;
import io.tqserve.kv.KvScheme;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

class RoutingServiceTest {

    /** A lane with a token budget and a number of tokens in use; nothing runs. */
    static final class FakeLane implements Lane {
        final Kind kind;
        final KvLayout layout;
        final long budgetTokens;
        long usedTokens;

        FakeLane(Kind kind, KvScheme scheme, long budgetTokens) {
            this.kind = kind;
            this.layout = KvLayout.of(scheme, 6, 2, 128);
            this.budgetTokens = budgetTokens;
        }

        @Override
        public Kind kind() {
            return kind;
        }

        @Override
        public KvScheme scheme() {
            return layout.scheme();
        }

        @Override
        public KvLayout layout() {
            return layout;
        }

        @Override
        public Flux<GenerationEvent> submit(GenerationRequest request) {
            throw new UnsupportedOperationException();
        }

        @Override
        public boolean canEverAdmit(int worstCaseTokens) {
            return worstCaseTokens <= budgetTokens;
        }

        @Override
        public boolean canAdmitNow(int worstCaseTokens) {
            return usedTokens + worstCaseTokens <= budgetTokens;
        }

        @Override
        public long kvBytesUsed() {
            return layout.bytesFor(usedTokens);
        }

        @Override
        public long kvBytesReserved() {
            return kvBytesUsed();
        }

        @Override
        public long kvBytesBudget() {
            return layout.bytesFor(budgetTokens);
        }

        @Override
        public int running() {
            return 0;
        }

        @Override
        public int waiting() {
            return 0;
        }

        @Override
        public void close() {
        }
    }

    final FakeLane turbo = new FakeLane(Lane.Kind.TURBO, KvScheme.TURBO_DEFAULT, 4096);
    final FakeLane batched = new FakeLane(Lane.Kind.BATCHED, KvScheme.BF16, 2048);
    final List<RouteDecision> observed = new ArrayList<>();
    final RequestObserver observer = new RequestObserver() {
        @Override
        public void routed(RouteDecision decision) {
            observed.add(decision);
        }
    };

    RoutingService auto() {
        return new RoutingService(RoutingPolicy.AUTO, 1024, List.of(turbo, batched), observer);
    }

    static RouteRequest req(int worst) {
        return new RouteRequest(worst, Optional.empty());
    }

    static RouteRequest req(int worst, Lane.Kind override) {
        return new RouteRequest(worst, Optional.of(override));
    }

    @Test
    void shortContextGoesToTheBatchedLane() {
        RouteDecision d = auto().route(req(1024));
        assertSame(batched, d.lane());
        assertEquals(RouteReason.SHORT_CONTEXT, d.reason());
        assertEquals(List.of(d), observed, "every decision is reported once");
    }

    @Test
    void longContextGoesToTheTurboLane() {
        RouteDecision d = auto().route(req(1025));
        assertSame(turbo, d.lane());
        assertEquals(RouteReason.LONG_CONTEXT, d.reason());
    }

    @Test
    void overrideWinsWhenItsLaneIsEnabledAndCouldHoldTheRequest() {
        RouteDecision d = auto().route(req(10, Lane.Kind.TURBO));
        assertSame(turbo, d.lane());
        assertEquals(RouteReason.OVERRIDE, d.reason());
        RouteDecision tooBig = auto().route(req(3000, Lane.Kind.BATCHED));
        assertSame(turbo, tooBig.lane(), "the batched lane could never hold 3000 tokens");
        assertEquals(RouteReason.LONG_CONTEXT, tooBig.reason());
    }

    @Test
    void budgetFallbackWhenThePreferredLaneCanNeverAdmit() {
        FakeLane smallTurbo = new FakeLane(Lane.Kind.TURBO, KvScheme.TURBO_DEFAULT, 1500);
        RoutingService r = new RoutingService(RoutingPolicy.AUTO, 1024, List.of(smallTurbo, batched), observer);
        RouteDecision d = r.route(req(2000));
        assertSame(batched, d.lane());
        assertEquals(RouteReason.BUDGET_FALLBACK, d.reason());
    }

    @Test
    void budgetFallbackWhenThePreferredLaneIsFullAndTheOtherHasRoom() {
        batched.usedTokens = 2000;
        RouteDecision d = auto().route(req(100));
        assertSame(turbo, d.lane());
        assertEquals(RouteReason.BUDGET_FALLBACK, d.reason());
    }

    @Test
    void queuesOnThePreferredLaneWhenNeitherHasRoomNow() {
        batched.usedTokens = 2000;
        turbo.usedTokens = 4000;
        RouteDecision d = auto().route(req(100));
        assertSame(batched, d.lane());
        assertEquals(RouteReason.SHORT_CONTEXT, d.reason());
    }

    @Test
    void onlyLaneWhenOneLaneIsEnabledOrThePolicyPinsOne() {
        RoutingService one = new RoutingService(RoutingPolicy.AUTO, 1024, List.of(batched), observer);
        assertEquals(new RouteDecision(batched, RouteReason.ONLY_LANE), one.route(req(2000)));
        assertEquals(new RouteDecision(batched, RouteReason.ONLY_LANE), one.route(req(5, Lane.Kind.TURBO)),
                "an override of a disabled lane is ignored");
        RoutingService pinned = new RoutingService(RoutingPolicy.TURBO, 1024, List.of(turbo, batched), observer);
        assertEquals(new RouteDecision(turbo, RouteReason.ONLY_LANE), pinned.route(req(5)));
        assertEquals(new RouteDecision(batched, RouteReason.OVERRIDE), pinned.route(req(5, Lane.Kind.BATCHED)));
    }

    @Test
    void refusesARequestNoLaneCouldEverHold() {
        NoLaneFitsException e = assertThrows(NoLaneFitsException.class, () -> auto().route(req(5000)));
        assertTrue(e.getMessage().contains("turbo: 4096 tokens"), e.getMessage());
        assertTrue(observed.isEmpty(), "a refused request is not a routing decision");
    }

    @Test
    void rejectsAPolicyWhoseLaneIsDisabled() {
        assertThrows(IllegalArgumentException.class,
                () -> new RoutingService(RoutingPolicy.TURBO, 1024, List.of(batched), observer));
    }
}
