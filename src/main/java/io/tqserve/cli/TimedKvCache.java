package io.tqserve.cli;

import io.tqserve.kv.ForwardingKvCache;
import io.tqserve.kv.KvCache;

/**
 * A KV cache that delegates everything and adds up the time spent in {@link #attend} (storing the new K/V and
 * attending, every layer): the attention time of the decode benchmark, as wall time and as CPU time of the given
 * threads (the caller and the kernel pool, which do all of attention's work).
 */
final class TimedKvCache extends ForwardingKvCache {
    private final CpuClock cpu;
    private long attendNanos;
    private long attendCpuNanos;

    TimedKvCache(KvCache cache, CpuClock cpu) {
        super(cache);
        this.cpu = cpu;
    }

    /** The measured cache. */
    KvCache inner() {
        return main;
    }

    long attendNanos() {
        return attendNanos;
    }

    long attendCpuNanos() {
        return attendCpuNanos;
    }

    void resetTimer() {
        attendNanos = 0;
        attendCpuNanos = 0;
    }

    @Override
    public void attend(int layer, int rowOffset, int rows, float[] q, float[] k, float[] v, float[] out) {
        long c0 = cpu.nanos();
        long t0 = System.nanoTime();
        main.attend(layer, rowOffset, rows, q, k, v, out);
        attendNanos += System.nanoTime() - t0;
        attendCpuNanos += cpu.nanos() - c0;
    }
}
