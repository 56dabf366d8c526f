package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.tqserve.config.TqserveApplication;
import io.tqserve.routing.ServingRuntime;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

/**
 * The structured-output warm-up before readiness: it compiles every warm-up request's constraint and samples
 * through it (its report counts the compiles and masks), leaves no per-tenant cache entry, and moves no
 * structured-output metric; a warm-up whose requests all fail reports them and returns.
 */
@SpringBootTest(classes = TqserveApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"tqserve.backend.warmup=0", "tqserve.structured-output.warmup=60s"})
class StructuredOutputWarmupTest {
    @Autowired
    ServingRuntime runtime;
    @Autowired
    StructuredOutputWarmup warmup;
    @Autowired
    GenerationHandler handler;
    @Autowired
    MeterRegistry registry;
    @Autowired
    ConstraintPool pool;

    @Test
    void theWarmupCompilesAndMasksAndLeavesNoCacheEntryNorMetric() throws Exception {
        runtime.whenLoaded().get(120, TimeUnit.SECONDS);
        StructuredOutputWarmup.Report r = warmup.last();
        int perRound = StructuredOutputWarmupRequests.bodies(
                ChatFormats.of(runtime.loaded().orElseThrow().model()).tools().isPresent()).size();
        assertThat(r.failures()).as(String.valueOf(r.firstFailure())).isZero();
        assertThat(r.rounds()).isGreaterThanOrEqualTo(StructuredOutputWarmup.MIN_ROUNDS);
        assertThat(r.compiles()).isEqualTo(r.rounds() * perRound);
        // every output takes at least one mask; most take many
        assertThat(r.masks()).isGreaterThan(r.compiles() * StructuredOutputWarmup.OUTPUTS);

        ConstraintCache cache = handler.constraintCache();
        assertThat(cache == null ? 0 : cache.size()).isZero();
        List<Meter> meters = registry.getMeters().stream()
                .filter(m -> m.getId().getName().startsWith("tqserve.structured.")).toList();
        assertThat(meters).isNotEmpty();
        for (Meter m : meters) {
            double value = switch (m) {
                case Counter c -> c.count();
                case Timer t -> t.count();
                case Gauge g -> g.value();
                default -> 0;
            };
            assertThat(value).as(m.getId().toString()).isZero();
        }
    }

    @Test
    void aWarmupWhoseRequestsFailReportsThemAndReturns() throws Exception {
        runtime.whenLoaded().get(120, TimeUnit.SECONDS);
        // a prompt limit of one character refuses every warm-up request at parsing
        ApiSettings tight = new ApiSettings(List.of(), false, 512, Duration.ofSeconds(5), Duration.ofSeconds(1),
                ApiSettings.DEFAULT_REQUEST_TIMEOUT, Duration.ofSeconds(1), false, 16, 1, List.of(), List.of(), 429,
                false);
        io.tqserve.model.Model model = runtime.loaded().orElseThrow().model();
        StructuredOutputWarmup.Report r = new StructuredOutputWarmup(pool, tight).run(model, Duration.ofSeconds(30),
                () -> true);
        assertThat(r.rounds()).isGreaterThanOrEqualTo(StructuredOutputWarmup.MIN_ROUNDS);
        assertThat(r.compiles()).isZero();
        assertThat(r.masks()).isZero();
        assertThat(r.failures()).isEqualTo(r.rounds()
                * StructuredOutputWarmupRequests.bodies(ChatFormats.of(model).tools().isPresent()).size());
        assertThat(r.firstFailure()).isInstanceOf(ApiException.class).hasMessageContaining("characters");
    }
}
