package io.tqserve.cli;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;

/**
 * CPU time (ns) of a fixed set of threads: the calling thread and the backend's kernel pool ("tqserve-kernel-N"),
 * which do all the work of a forward pass. Unlike wall time it does not grow while the threads wait for a core,
 * which on a shared machine is what makes wall-clock ratios drift.
 */
final class CpuClock {
    private final ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    private final long[] ids;

    private CpuClock(long[] ids) {
        this.ids = ids;
    }

    /** The current thread and every live kernel-pool thread (call after the pool has run work once). */
    static CpuClock forKernelThreads() {
        List<Long> ids = new ArrayList<>();
        ids.add(Thread.currentThread().threadId());
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith("tqserve-kernel-")) {
                ids.add(t.threadId());
            }
        }
        return new CpuClock(ids.stream().mapToLong(Long::longValue).toArray());
    }

    int threads() {
        return ids.length;
    }

    long nanos() {
        long sum = 0;
        for (long id : ids) {
            long t = mx.getThreadCpuTime(id);
            sum += Math.max(0, t);
        }
        return sum;
    }
}
