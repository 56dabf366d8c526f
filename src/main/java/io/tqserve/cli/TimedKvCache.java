package io.tqserve.cli;

import io.tqserve.kv.AttentionShape;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvLayout;
import io.tqserve.kv.KvScheme;
import java.lang.foreign.MemorySegment;

/**
 * A KV cache that delegates everything and adds up the time spent in {@link #attend} (storing the new K/V and
 * attending, every layer): the attention time of the decode benchmark, as wall time and as CPU time of the given
 * threads (the caller and the kernel pool, which do all of attention's work).
 */
final class TimedKvCache implements KvCache {
    private final KvCache cache;
    private final CpuClock cpu;
    private long attendNanos;
    private long attendCpuNanos;

    TimedKvCache(KvCache cache, CpuClock cpu) {
        this.cache = cache;
        this.cpu = cpu;
    }

    /** The measured cache. */
    KvCache inner() {
        return cache;
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
        cache.attend(layer, rowOffset, rows, q, k, v, out);
        attendNanos += System.nanoTime() - t0;
        attendCpuNanos += cpu.nanos() - c0;
    }

    @Override
    public KvScheme scheme() {
        return cache.scheme();
    }

    @Override
    public AttentionShape shape() {
        return cache.shape();
    }

    @Override
    public KvLayout layout() {
        return cache.layout();
    }

    @Override
    public int length() {
        return cache.length();
    }

    @Override
    public int maxTokens() {
        return cache.maxTokens();
    }

    @Override
    public long bytesUsed() {
        return cache.bytesUsed();
    }

    @Override
    public long bytesAllocated() {
        return cache.bytesAllocated();
    }

    @Override
    public void advance(int rows) {
        cache.advance(rows);
    }

    @Override
    public void exportLayer(int layer, int from, int count, MemorySegment dst) {
        cache.exportLayer(layer, from, count, dst);
    }

    @Override
    public void importLayer(int layer, int count, MemorySegment src) {
        cache.importLayer(layer, count, src);
    }

    @Override
    public void truncate(int tokens) {
        cache.truncate(tokens);
    }

    @Override
    public void close() {
        cache.close();
    }
}
