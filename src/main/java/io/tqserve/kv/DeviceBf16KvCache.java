package io.tqserve.kv;

import io.tqserve.backend.DeviceKv;

/**
 * The bf16 KV cache held on a backend's device (MLX arrays on the MLX backend). Same layout and byte counts as
 * {@link Bf16KvCache}; the transformer hands {@link #device()} to the backend's device decoder, and the Java
 * forward reaches it through {@link #attend}. Every call goes to the device cache, which checks its arguments
 * with the same {@code backend.KvLedger} as the Java caches.
 */
public final class DeviceBf16KvCache implements DeviceKvCache {
    private final AttentionShape shape;
    private final KvLayout layout;
    private final DeviceKv device;

    public DeviceBf16KvCache(AttentionShape shape, DeviceKv device) {
        this.shape = shape;
        this.layout = shape.layout(KvScheme.BF16);
        this.device = device;
    }

    @Override
    public DeviceKv device() {
        return device;
    }

    @Override
    public KvScheme scheme() {
        return KvScheme.BF16;
    }

    @Override
    public AttentionShape shape() {
        return shape;
    }

    @Override
    public KvLayout layout() {
        return layout;
    }

    @Override
    public int length() {
        return device.length();
    }

    @Override
    public int maxTokens() {
        return device.maxTokens();
    }

    @Override
    public long bytesAllocated() {
        return device.bytesAllocated();
    }

    @Override
    public void attend(int layer, int rowOffset, int rows, float[] q, float[] k, float[] v, float[] out) {
        device.attend(layer, rowOffset, rows, q, k, v, out);
    }

    @Override
    public void advance(int rows) {
        device.advance(rows);
    }

    @Override
    public void exportLayer(int layer, int from, int count, java.lang.foreign.MemorySegment dst) {
        device.exportLayer(layer, from, count, dst);
    }

    @Override
    public void importLayer(int layer, int count, java.lang.foreign.MemorySegment src) {
        device.importLayer(layer, count, src);
    }

    @Override
    public void truncate(int tokens) {
        device.truncate(tokens);
    }

    @Override
    public void close() {
        device.close();
    }
}
