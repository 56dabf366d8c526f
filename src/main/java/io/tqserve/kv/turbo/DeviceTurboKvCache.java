package io.tqserve.kv.turbo;

import io.tqserve.backend.ComputeBackend;
import io.tqserve.backend.DeviceKv;
import io.tqserve.backend.DeviceTurboSpec;
import io.tqserve.kv.AttentionShape;
import io.tqserve.kv.DeviceKvCache;
import io.tqserve.kv.KvLayout;
import io.tqserve.kv.KvScheme;
import java.util.Optional;

/**
 * The TurboQuant KV cache held on a backend's device (MLX arrays on the MLX backend): same entry format, export
 * bytes and byte accounting as {@link TurboQuantKvCache} (bf16 prefix tokens counted at bf16's size), encoded and
 * attended on the device by the backend's device decoder. Every call goes to the device cache.
 */
public final class DeviceTurboKvCache implements DeviceKvCache {
    private final KvScheme.Turbo scheme;
    private final AttentionShape shape;
    private final KvLayout layout;
    private final int quantizedKvStart;
    private final DeviceKv device;

    private DeviceTurboKvCache(KvScheme.Turbo scheme, AttentionShape shape, int quantizedKvStart, DeviceKv device) {
        this.scheme = scheme;
        this.shape = shape;
        this.layout = shape.layout(scheme);
        this.quantizedKvStart = quantizedKvStart;
        this.device = device;
    }

    /** A device turbo cache when the backend holds turbo caches on its device, else empty. */
    public static Optional<DeviceTurboKvCache> create(KvScheme.Turbo scheme, AttentionShape shape,
            ComputeBackend backend, int maxTokens, int quantizedKvStart) {
        int d = shape.headDim();
        TurboLayout tl = TurboLayout.of(scheme, d);
        DeviceTurboSpec spec = new DeviceTurboSpec(shape.layers(), shape.numHeads(), shape.numKvHeads(), d, maxTokens,
                quantizedKvStart, tl.kBits(), tl.keyQuant().signed(), tl.vBits(), TurboConstants.signs(d),
                TurboConstants.centroids(tl.vBits()), TurboConstants.boundaries(tl.vBits()));
        if (spec.entryBytes() != tl.bytes()) {
            throw new IllegalStateException("device entry of " + spec.entryBytes() + " bytes, format " + tl.bytes());
        }
        return backend.newDeviceTurboKv(spec).map(dev -> new DeviceTurboKvCache(scheme, shape, quantizedKvStart, dev));
    }

    @Override
    public DeviceKv device() {
        return device;
    }

    public int quantizedKvStart() {
        return quantizedKvStart;
    }

    @Override
    public KvScheme scheme() {
        return scheme;
    }

    @Override
    public AttentionShape shape() {
        return shape;
    }

    @Override
    public KvLayout layout() {
        return layout;
    }

    /** As {@code ChunkedKvCache}: KvLayout bytes of the quantized tokens plus bf16 bytes of the tokens kept in bf16. */
    @Override
    public long bytesUsed() {
        int kept = Math.min(length(), quantizedKvStart);
        return shape.layout(KvScheme.BF16).bytesFor(kept) + layout.bytesFor(length() - kept);
    }
}
