package io.tqserve.management;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.tqserve.constraint.CompileObserver;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.springframework.stereotype.Component;

/**
 * The meters of constraint compiles (structured outputs and tool calls, docs/api.md): compiles by outcome and
 * their time on a compile thread, compiles running, how requests found their constraint, and what the
 * compiled-constraint cache holds. Every series is registered up front.
 */
@Component
public final class StructuredOutputMetrics implements CompileObserver {
    private final Map<Outcome, Counter> compiles = new EnumMap<>(Outcome.class);
    private final Map<Lookup, Counter> lookups = new EnumMap<>(Lookup.class);
    private final Timer compileTime;
    private final AtomicInteger running = new AtomicInteger();
    private final AtomicLong cacheBytes = new AtomicLong();
    private final AtomicLong cacheEntries = new AtomicLong();

    public StructuredOutputMetrics(MeterRegistry registry) {
        for (Outcome o : Outcome.values()) {
            compiles.put(o, Counter.builder("tqserve.structured.compiles").description("constraint compiles ended")
                    .tags("outcome", o.wireName()).register(registry));
        }
        for (Lookup l : Lookup.values()) {
            lookups.put(l, Counter.builder("tqserve.structured.cache.lookups")
                    .description("requests that needed a compiled constraint").tags("result", l.wireName())
                    .register(registry));
        }
        compileTime = Timer.builder("tqserve.structured.compile.time")
                .description("time constraint compiles ran on a compile thread").publishPercentileHistogram()
                .minimumExpectedValue(Duration.ofMillis(1)).maximumExpectedValue(Duration.ofMinutes(1))
                .register(registry);
        Gauge.builder("tqserve.structured.compiles.running", running, AtomicInteger::get)
                .description("constraint compiles running on compile threads").strongReference(true)
                .register(registry);
        Gauge.builder("tqserve.structured.cache.bytes", cacheBytes, AtomicLong::get)
                .description("bytes of compiled constraints cached").strongReference(true).register(registry);
        Gauge.builder("tqserve.structured.cache.entries", cacheEntries, AtomicLong::get)
                .description("compiled constraints cached").strongReference(true).register(registry);
    }

    @Override
    public void lookup(Lookup lookup) {
        lookups.get(lookup).increment();
    }

    @Override
    public void started() {
        running.incrementAndGet();
    }

    @Override
    public void ended(Outcome outcome, long nanos) {
        compiles.get(outcome).increment();
        if (nanos >= 0) {
            running.decrementAndGet();
            compileTime.record(nanos, TimeUnit.NANOSECONDS);
        }
    }

    @Override
    public void cache(long bytes, int entries) {
        cacheBytes.set(bytes);
        cacheEntries.set(entries);
    }
}
