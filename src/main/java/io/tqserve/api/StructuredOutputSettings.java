package io.tqserve.api;

import io.tqserve.constraint.ConstraintLimits;
import java.time.Duration;

/**
 * How constraints of structured outputs and tool calls are compiled and cached ({@code tqserve.structured-output.*}).
 *
 * @param compileThreads threads that compile constraints (never the request or event-loop threads)
 * @param compileQueue   compiles that may wait for a thread; a request that finds the queue full is refused with
 *                       the queue-full status of {@code tqserve.api.queue-full-status}
 * @param cacheBytes     most bytes of compiled constraints kept for reuse (all tenants together)
 * @param compileTimeout a compile still running this long is refused with a 400 (the compiler checks its own
 *                       clock; the pool interrupts a compile still running at twice this long)
 * @param limits         the budget of each compile and mask (its compile time is {@code compileTimeout}; its
 *                       allocations are counted by {@link CompileAllocation})
 * @param lowPriority    whether the compile threads run at the lowest OS scheduling priority
 *                       ({@link io.tqserve.backend.BackgroundPriority}), so compiles take only CPU the lanes leave
 */
public record StructuredOutputSettings(int compileThreads, int compileQueue, long cacheBytes,
        Duration compileTimeout, ConstraintLimits limits, boolean lowPriority) {
    /** The defaults of TqserveProperties.StructuredOutput. */
    public static final StructuredOutputSettings DEFAULTS = new StructuredOutputSettings(defaultThreads(), 64,
            64L << 20, Duration.ofMillis(ConstraintLimits.DEFAULT.compileMillis()), ConstraintLimits.DEFAULT, true);

    public StructuredOutputSettings {
        if (compileThreads < 1 || compileQueue < 1 || cacheBytes < 0 || compileTimeout.isNegative()
                || compileTimeout.isZero()) {
            throw new IllegalArgumentException("invalid structured-output settings");
        }
        // every compile of the server counts its allocations (the pool begins the count when a compile starts)
        limits = limits.withCompileMillis(Math.max(1, compileTimeout.toMillis()))
                .withCompileBytes(limits.compileBytes(), CompileAllocation.METER);
    }

    /** When the pool interrupts a compile that has not ended by its own clock. */
    Duration interruptAfter() {
        return compileTimeout.multipliedBy(2);
    }

    /** Half the processors, at least one: compiles never take the whole machine from decoding. */
    public static int defaultThreads() {
        return Math.max(1, Runtime.getRuntime().availableProcessors() / 2);
    }
}
