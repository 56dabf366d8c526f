package io.tqserve.api;

import io.tqserve.constraint.AllocationMeter;
import java.lang.management.ManagementFactory;

/**
 * The allocation meter of constraint compiles ({@code tqserve.structured-output.compile-memory}): the bytes the
 * compiling thread has allocated since {@link #begin()}, read from the JVM's per-thread counter (HotSpot's
 * {@code com.sun.management.ThreadMXBean#getCurrentThreadAllocatedBytes}, a read of the thread's own allocation
 * count: cheap enough for every check of the compile's time budget). The compile pool begins a count when a compile
 * starts and ends it after; on a thread with no count begun, or a JVM without the counter, nothing is measured.
 */
public final class CompileAllocation implements AllocationMeter {
    /** The one meter: the count lives per thread. */
    public static final CompileAllocation METER = new CompileAllocation();

    private static final com.sun.management.ThreadMXBean THREADS = threads();
    private static final ThreadLocal<long[]> START = new ThreadLocal<>();

    private CompileAllocation() {
    }

    private static com.sun.management.ThreadMXBean threads() {
        if (ManagementFactory.getThreadMXBean() instanceof com.sun.management.ThreadMXBean t
                && t.isThreadAllocatedMemorySupported()) {
            if (!t.isThreadAllocatedMemoryEnabled()) {
                t.setThreadAllocatedMemoryEnabled(true);
            }
            return t;
        }
        return null;
    }

    /** Whether this JVM counts the bytes each thread allocates. */
    public static boolean supported() {
        return THREADS != null;
    }

    /** Starts counting this thread's allocations from zero (a compile begins on it). */
    public static void begin() {
        if (THREADS != null) {
            long[] s = START.get();
            if (s == null) {
                s = new long[1];
                START.set(s);
            }
            s[0] = THREADS.getCurrentThreadAllocatedBytes();
        }
    }

    /** Stops counting on this thread (its compile ended). */
    public static void end() {
        START.remove();
    }

    @Override
    public long allocatedBytes() {
        long[] s = START.get();
        return s == null || THREADS == null ? -1 : THREADS.getCurrentThreadAllocatedBytes() - s[0];
    }
}
