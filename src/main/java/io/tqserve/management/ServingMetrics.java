package io.tqserve.management;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.tqserve.engine.FinishReason;
import io.tqserve.engine.Lane;
import io.tqserve.engine.LaneObserver;
import io.tqserve.routing.LanePlan;
import io.tqserve.routing.RequestObserver;
import io.tqserve.routing.RouteDecision;
import io.tqserve.routing.RouteReason;
import io.tqserve.routing.ServingRuntime;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import org.springframework.stereotype.Component;

/**
 * Every tqserve meter of docs/api.md. Gauges read the lanes live; counters and timers are fed by the lanes
 * ({@link LaneObserver}: finished requests, token counts) and the API ({@link RequestObserver}: routing
 * decisions, queue time, TTFT, inter-token time, end-to-end latency). Tag values come from closed sets only.
 * Every counter and timer of every configured lane is registered up front, so a scrape shows zeros rather than
 * missing series.
 */
@Component
public final class ServingMetrics implements LaneObserver, RequestObserver {
    private final Map<Lane.Kind, Map<FinishReason, Counter>> finished = new EnumMap<>(Lane.Kind.class);
    private final Map<Lane.Kind, Map<RouteReason, Counter>> decisions = new EnumMap<>(Lane.Kind.class);
    private final Map<Lane.Kind, Counter> promptTokens = new EnumMap<>(Lane.Kind.class);
    private final Map<Lane.Kind, Counter> generatedTokens = new EnumMap<>(Lane.Kind.class);
    private final Map<Lane.Kind, Timer> ttft = new EnumMap<>(Lane.Kind.class);
    private final Map<Lane.Kind, Timer> interToken = new EnumMap<>(Lane.Kind.class);
    private final Map<Lane.Kind, Timer> e2e = new EnumMap<>(Lane.Kind.class);
    private final Map<Lane.Kind, Timer> queue = new EnumMap<>(Lane.Kind.class);

    /** Per lane and endpoint; endpoints are the API's few names, registered when first seen. */
    private final java.util.concurrent.ConcurrentHashMap<String, Counter> byEndpoint =
            new java.util.concurrent.ConcurrentHashMap<>();
    private final MeterRegistry registry;

    public ServingMetrics(MeterRegistry registry, ServingRuntime runtime, io.tqserve.model.WeightsInfo weights) {
        this.registry = registry;
        for (LanePlan plan : runtime.plans()) {
            Lane.Kind kind = plan.kind();
            String lane = kind.wireName();
            String scheme = plan.scheme().id();
            Gauge.builder("tqserve.kv.bytes.per.token", plan, p -> p.layout().bytesPerToken())
                    .description("exact KV bytes one token costs (all layers, all KV heads)")
                    .tags("lane", lane, "scheme", scheme).strongReference(true).register(registry);
            Gauge.builder("tqserve.kv.compression.ratio", plan, p -> p.layout().compressionRatio())
                    .description("bf16 bytes per token / this lane's bytes per token")
                    .tags("lane", lane, "scheme", scheme).strongReference(true).register(registry);
            laneGauge(registry, runtime, kind, "tqserve.kv.bytes.used", "KV memory in use", l -> l.kvBytesUsed());
            Gauge.builder("tqserve.kv.bytes.budget", plan, LanePlan::budgetBytes).description("KV memory allowed")
                    .tags("lane", lane).strongReference(true).register(registry);
            laneGauge(registry, runtime, kind, "tqserve.kv.usage", "KV bytes used / budget (0..1)",
                    l -> (double) l.kvBytesUsed() / l.kvBytesBudget());
            io.micrometer.core.instrument.FunctionCounter.builder("tqserve.prefix.cache.queries", runtime,
                            r -> r.lane(kind).flatMap(Lane::promptCache).map(c -> (double) c.queries()).orElse(0.0))
                    .description("prompt-cache lookups").tags("lane", lane).register(registry);
            io.micrometer.core.instrument.FunctionCounter.builder("tqserve.prefix.cache.hits", runtime,
                            r -> r.lane(kind).flatMap(Lane::promptCache).map(c -> (double) c.hits()).orElse(0.0))
                    .description("prompt-cache lookups that reused a prefix").tags("lane", lane).register(registry);
            laneGauge(registry, runtime, kind, "tqserve.prefix.cache.bytes", "prompt-cache bytes held in memory",
                    l -> l.promptCache().map(c -> (double) c.memoryBytes()).orElse(0.0));
            laneCounter(registry, runtime, kind, "tqserve.speculative.draft.tokens",
                    "prompt-lookup draft tokens verified", Lane::draftTokensProposed);
            laneCounter(registry, runtime, kind, "tqserve.speculative.accepted.tokens",
                    "draft tokens sampling confirmed (acceptance rate = accepted / draft)", Lane::draftTokensAccepted);
            laneCounter(registry, runtime, kind, "tqserve.speculative.passes", "forward passes that verified a draft",
                    Lane::verificationPasses);
            laneCounter(registry, runtime, kind, "tqserve.speculative.emitted.tokens",
                    "tokens those passes emitted (speed-up per pass = emitted / passes)", Lane::verificationTokens);
            laneGauge(registry, runtime, kind, "tqserve.requests.running", "sequences running", Lane::running);
            laneGauge(registry, runtime, kind, "tqserve.requests.waiting", "requests queued", Lane::waiting);

            Map<FinishReason, Counter> byReason = new EnumMap<>(FinishReason.class);
            for (FinishReason r : FinishReason.values()) {
                byReason.put(r, Counter.builder("tqserve.requests.finished").description("requests ended")
                        .tags("lane", lane, "finish_reason", r.wireName()).register(registry));
            }
            finished.put(kind, byReason);
            Map<RouteReason, Counter> byRoute = new EnumMap<>(RouteReason.class);
            for (RouteReason r : RouteReason.values()) {
                if (r == (kind == Lane.Kind.TURBO ? RouteReason.SHORT_CONTEXT : RouteReason.LONG_CONTEXT)) {
                    continue; // a combination routing never produces
                }
                byRoute.put(r, Counter.builder("tqserve.routing.decisions").description("one per routed request")
                        .tags("lane", lane, "reason", r.wireName()).register(registry));
            }
            decisions.put(kind, byRoute);
            promptTokens.put(kind, Counter.builder("tqserve.tokens.prompt").description("prompt tokens processed")
                    .tags("lane", lane).register(registry));
            generatedTokens.put(kind, Counter.builder("tqserve.tokens.generated").description("tokens generated")
                    .tags("lane", lane).register(registry));
            ttft.put(kind, timer(registry, "tqserve.request.ttft", "time to first token", lane));
            interToken.put(kind, timer(registry, "tqserve.request.inter.token", "time between streamed tokens", lane));
            e2e.put(kind, timer(registry, "tqserve.request.e2e", "total request latency", lane));
            queue.put(kind, timer(registry, "tqserve.request.queue", "time waiting for a lane", lane));
        }
        // Replica-wide views, one series each, for routers and autoscalers that read one number per replica (the
        // Gateway API Inference Extension's endpoint picker takes the first series a metric spec matches).
        Gauge.builder("tqserve.server.requests.waiting", runtime, r -> sum(r, Lane::waiting))
                .description("requests queued, all lanes").strongReference(true).register(registry);
        Gauge.builder("tqserve.server.requests.running", runtime, r -> sum(r, Lane::running))
                .description("sequences running, all lanes").strongReference(true).register(registry);
        Gauge.builder("tqserve.server.kv.usage", runtime, ServingMetrics::kvReservedFraction)
                .description("KV bytes reserved by admitted requests (worst case) / KV budget, all lanes (0..1)")
                .strongReference(true).register(registry);
        // The backend's device memory (MLX: active, peak since start, freed-buffer cache); 0 on the CPU backend and
        // while the model loads.
        for (String kind : java.util.List.of("active", "peak", "cache")) {
            Gauge.builder("tqserve.device.memory", runtime, r -> deviceBytes(r, kind)).baseUnit("bytes")
                    .description("device memory of the backend (MLX): active, peak, cache; 0 on the CPU")
                    .tags("kind", kind).strongReference(true).register(registry);
        }
        Gauge.builder("tqserve.model.info", () -> 1).description("the served model")
                .tags("model", runtime.modelId(), "architecture", runtime.modelConfig().architecture().hfName(),
                        "head_dim", Integer.toString(runtime.modelConfig().headDim()), "backend", runtime.backend(),
                        "weight_bits", Integer.toString(weights.bits()), "weight_group_size",
                        Integer.toString(weights.groupSize()), "weight_bytes", Long.toString(weights.bytes()))
                .strongReference(true).register(registry);
    }

    static double deviceBytes(ServingRuntime runtime, String kind) {
        return runtime.loaded().map(l -> {
            io.tqserve.backend.DeviceStats d = l.model().transformer().backend().deviceStats();
            return (double) switch (kind) {
                case "active" -> d.activeBytes();
                case "peak" -> d.peakBytes();
                default -> d.cacheBytes();
            };
        }).orElse(0.0);
    }

    private static double sum(ServingRuntime runtime, ToDoubleFunction<Lane> value) {
        double total = 0;
        for (LanePlan plan : runtime.plans()) {
            total += runtime.lane(plan.kind()).map(value::applyAsDouble).orElse(0.0);
        }
        return total;
    }

    /** Reserved rather than used bytes: admission refuses by reservations, so this is what new requests meet. */
    static double kvReservedFraction(ServingRuntime runtime) {
        double budget = sum(runtime, Lane::kvBytesBudget);
        return budget == 0 ? 0 : Math.min(1.0, sum(runtime, Lane::kvBytesReserved) / budget);
    }

    private static void laneGauge(MeterRegistry registry, ServingRuntime runtime, Lane.Kind kind, String name,
            String description, ToDoubleFunction<Lane> value) {
        Gauge.builder(name, runtime, r -> r.lane(kind).map(value::applyAsDouble).orElse(0.0))
                .description(description).tags("lane", kind.wireName()).strongReference(true).register(registry);
    }

    private static void laneCounter(MeterRegistry registry, ServingRuntime runtime, Lane.Kind kind, String name,
            String description, ToDoubleFunction<Lane> value) {
        io.micrometer.core.instrument.FunctionCounter.builder(name, runtime,
                        r -> r.lane(kind).map(value::applyAsDouble).orElse(0.0))
                .description(description).tags("lane", kind.wireName()).register(registry);
    }

    private static Timer timer(MeterRegistry registry, String name, String description, String lane) {
        return Timer.builder(name).description(description).tags("lane", lane).publishPercentileHistogram()
                .minimumExpectedValue(Duration.ofMillis(1)).maximumExpectedValue(Duration.ofMinutes(10))
                .register(registry);
    }

    @Override
    public void sequenceEnded(Lane lane, FinishReason reason, int prompt, int completion) {
        Map<FinishReason, Counter> byReason = finished.get(lane.kind());
        if (byReason == null) {
            return;
        }
        byReason.get(reason).increment();
        promptTokens.get(lane.kind()).increment(prompt);
        generatedTokens.get(lane.kind()).increment(completion);
    }

    @Override
    public void endpoint(Lane.Kind lane, String endpoint) {
        byEndpoint.computeIfAbsent(lane.wireName() + "/" + endpoint, k -> Counter.builder("tqserve.requests.endpoint")
                .description("requests routed to a lane, by API endpoint").tags("lane", lane.wireName(), "endpoint",
                        endpoint).register(registry)).increment();
    }

    @Override
    public void routed(RouteDecision decision) {
        Map<RouteReason, Counter> byRoute = decisions.get(decision.lane().kind());
        Counter c = byRoute == null ? null : byRoute.get(decision.reason());
        if (c != null) {
            c.increment();
        }
    }

    @Override
    public void started(Lane.Kind lane, long queueNanos) {
        record(queue, lane, queueNanos);
    }

    @Override
    public void firstToken(Lane.Kind lane, long ttftNanos) {
        record(ttft, lane, ttftNanos);
    }

    @Override
    public void interToken(Lane.Kind lane, long nanos) {
        record(interToken, lane, nanos);
    }

    @Override
    public void completed(Lane.Kind lane, long e2eNanos) {
        record(e2e, lane, e2eNanos);
    }

    private static void record(Map<Lane.Kind, Timer> timers, Lane.Kind lane, long nanos) {
        Timer t = timers.get(lane);
        if (t != null) {
            t.record(nanos, TimeUnit.NANOSECONDS);
        }
    }
}
