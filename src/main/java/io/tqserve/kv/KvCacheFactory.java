package io.tqserve.kv;

import io.tqserve.backend.ComputeBackend;
import io.tqserve.kv.turbo.AttentionPath;
import io.tqserve.kv.turbo.DeviceTurboKvCache;
import io.tqserve.kv.turbo.TurboQuantKvCache;

/** Creates the KV cache of a scheme. */
public final class KvCacheFactory {
    private KvCacheFactory() {
    }

    /**
     * A new empty cache. For bf16 and turbo, a backend with device-resident caches (MLX) gets one of those.
     *
     * @param maxTokens most tokens it may hold (prompt + max_tokens, capped by the model context)
     */
    public static KvCache create(KvScheme scheme, AttentionShape shape, ComputeBackend backend, int maxTokens) {
        return create(scheme, shape, backend, maxTokens, 0);
    }

    /**
     * A new empty cache whose first {@code quantizedKvStart} tokens stay bf16 (quantized schemes only; ignored by
     * bf16). Turbo caches use the fused attention path.
     */
    public static KvCache create(KvScheme scheme, AttentionShape shape, ComputeBackend backend, int maxTokens,
            int quantizedKvStart) {
        return switch (scheme) {
            case KvScheme.Bf16 b -> backend.newDeviceKv(shape.layers(), shape.numHeads(), shape.numKvHeads(),
                            shape.headDim(), maxTokens)
                    .<KvCache>map(device -> new DeviceBf16KvCache(shape, device))
                    .orElseGet(() -> new Bf16KvCache(shape, backend, maxTokens));
            case KvScheme.Turbo t -> DeviceTurboKvCache.create(t, shape, backend, maxTokens, quantizedKvStart)
                    .<KvCache>map(device -> device)
                    .orElseGet(() -> new TurboQuantKvCache(t, shape, backend, maxTokens, quantizedKvStart,
                            AttentionPath.FUSED));
            case KvScheme.Uniform u -> new PackedKvCache(u, new UniformAffineCodec(u, shape.headDim()), shape, backend,
                    maxTokens, quantizedKvStart);
        };
    }
}
