package io.tqserve.config;

import io.tqserve.engine.Lane;
import io.tqserve.kv.Bf16KvCache;
import io.tqserve.routing.LanePlan;
import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.Optional;

/**
 * Whether the lanes' KV budgets fit the machine. Admission keeps each lane's KV memory within its budget, so the
 * only way to run out of memory for KV caches is budgets larger than the memory the process can have: then the
 * operating system, not admission, would stop the server. KV caches live off the Java heap (native memory, which
 * {@code -XX:MaxDirectMemorySize} does not bound), so what is left for them is the physical (or container) memory
 * minus the maximum heap. Caches grow in chunks of {@link Bf16KvCache#CHUNK} tokens, so each running sequence may
 * hold up to one chunk more than it reserved. Checked at startup; a budget that does not fit is logged as a
 * warning (the heap maximum is a limit, not a use, so this can be a false alarm). The weights are memory-mapped and
 * read whole on every decode step, so their bytes (quantized: packed codes, scales and biases) count as well.
 */
final class KvMemoryCheck {
    private KvMemoryCheck() {
    }

    /** The most native memory the KV caches of these lanes can hold at once. */
    static long worstCaseBytes(List<LanePlan> plans, int maxBatch) {
        long total = 0;
        for (LanePlan p : plans) {
            int sequences = p.kind() == Lane.Kind.BATCHED ? maxBatch : 1;
            total += p.budgetBytes() + (long) sequences * Bf16KvCache.CHUNK * p.layout().bytesPerToken();
        }
        return total;
    }

    /** A warning when the worst case exceeds physical memory minus the maximum heap; empty when it fits. */
    static Optional<String> check(List<LanePlan> plans, int maxBatch, long physicalBytes, long maxHeapBytes) {
        return check(plans, maxBatch, 0, physicalBytes, maxHeapBytes);
    }

    /** As {@link #check(List, int, long, long)}, with the weights' bytes beside the KV caches. */
    static Optional<String> check(List<LanePlan> plans, int maxBatch, long weightBytes, long physicalBytes,
            long maxHeapBytes) {
        long kv = worstCaseBytes(plans, maxBatch);
        long left = physicalBytes - maxHeapBytes - weightBytes;
        if (kv <= left) {
            return Optional.empty();
        }
        return Optional.of(String.format("the KV budgets of the lanes may hold up to %d MB of native memory (with "
                + "allocation rounding), but only %d MB are left beside the Java heap and the weights (%d MB physical, "
                + "-Xmx %d MB, %d MB of weights): lower tqserve.lanes.batched.kv-budget / "
                + "tqserve.lanes.turbo.kv-budget or the heap, serve quantized weights, or the operating system may "
                + "stop the server before admission refuses a request", kv >> 20, Math.max(0, left) >> 20,
                physicalBytes >> 20, maxHeapBytes >> 20, weightBytes >> 20));
    }

    /** {@link #check} against this JVM and machine. */
    static Optional<String> checkThisMachine(List<LanePlan> plans, int maxBatch, long weightBytes) {
        if (!(ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os)) {
            return Optional.empty();
        }
        return check(plans, maxBatch, weightBytes, os.getTotalMemorySize(), Runtime.getRuntime().maxMemory());
    }
}
