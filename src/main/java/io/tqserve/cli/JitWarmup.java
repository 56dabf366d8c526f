package io.tqserve.cli;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;

/**
 * When a benchmark's warm-up rounds may stop: after {@link #MIN_NANOS}, once {@link #QUIET_ROUNDS} rounds in a row
 * added less than {@link #QUIET_MILLIS} of JIT compilation time, or after {@link #MAX_NANOS} regardless. A small
 * model's decode round lasts a fraction of a second, and on a two-core machine the compiler threads still working
 * after a fixed warm-up take a core from the kernel threads: single decode steps then last 2-4x the median, which a
 * mean over 64 steps turns into a 20-30 % lower tok/s. A server runs long after its code is compiled, so the steady
 * state is what the benchmark reports. Without compilation-time monitoring in the JVM the warm-up is MIN_NANOS.
 */
final class JitWarmup {
    static final long MIN_NANOS = 2_000_000_000L;
    static final long MAX_NANOS = 30_000_000_000L;
    static final long QUIET_MILLIS = 5;
    static final int QUIET_ROUNDS = 2;

    private final CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
    private final boolean monitored = jit != null && jit.isCompilationTimeMonitoringSupported();
    private final long start = System.nanoTime();
    private long compileMillis = monitored ? jit.getTotalCompilationTime() : 0;
    private int quiet;
    private int rounds;

    /** Called before each round: whether the round about to start is the measured one. */
    boolean done() {
        long elapsed = System.nanoTime() - start;
        if (rounds++ == 0) {
            return false;
        }
        if (monitored) {
            long now = jit.getTotalCompilationTime();
            quiet = now - compileMillis < QUIET_MILLIS ? quiet + 1 : 0;
            compileMillis = now;
        }
        return elapsed >= MAX_NANOS || elapsed >= MIN_NANOS && (!monitored || quiet >= QUIET_ROUNDS);
    }
}
