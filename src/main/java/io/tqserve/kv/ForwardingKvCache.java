package io.tqserve.kv;

import java.lang.foreign.MemorySegment;

/**
 * A KV cache that hands every call to another one (the decorator base of the benchmark's timing cache and of
 * tests' observing caches); subclasses override what they observe or change.
 */
public abstract class ForwardingKvCache implements KvCache {
    protected final KvCache main;

    protected ForwardingKvCache(KvCache main) {
        this.main = main;
    }

    @Override
    public void attend(int layer, int rowOffset, int rows, float[] q, float[] k, float[] v, float[] out) {
        main.attend(layer, rowOffset, rows, q, k, v, out);
    }

    @Override
    public void advance(int rows) {
        main.advance(rows);
    }

    @Override
    public KvScheme scheme() {
        return main.scheme();
    }

    @Override
    public AttentionShape shape() {
        return main.shape();
    }

    @Override
    public KvLayout layout() {
        return main.layout();
    }

    @Override
    public int length() {
        return main.length();
    }

    @Override
    public int maxTokens() {
        return main.maxTokens();
    }

    @Override
    public long bytesUsed() {
        return main.bytesUsed();
    }

    @Override
    public long bytesAllocated() {
        return main.bytesAllocated();
    }

    @Override
    public void exportLayer(int layer, int from, int count, MemorySegment dst) {
        main.exportLayer(layer, from, count, dst);
    }

    @Override
    public void importLayer(int layer, int count, MemorySegment src) {
        main.importLayer(layer, count, src);
    }

    @Override
    public void truncate(int tokens) {
        main.truncate(tokens);
    }

    @Override
    public void close() {
        main.close();
    }
}
