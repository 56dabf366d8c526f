package io.tqserve.kv;

import io.tqserve.backend.DeviceKv;

/**
 * The bf16 KV cache held on a backend's device (MLX arrays on the MLX backend). Same layout and byte counts as
 * {@link Bf16KvCache}; the transformer hands {@link #device()} to the backend's device decoder, and the Java
 * forward reaches it through {@link #attend}. Every call goes to the device cache, which checks its arguments
 * with the same {@code backend.AbstractSequenceKv} checks as the Java caches.
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
    public AttentionShape shape() {
        return shape;
    }

    @Override
    public KvLayout layout() {
        return layout;
    }
}
