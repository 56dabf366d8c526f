package io.tqserve.kv;

import io.tqserve.backend.ComputeBackend;

/** Creates the KV cache of a scheme. */
public final class KvCacheFactory {
    private KvCacheFactory() {
    }

    /**
     * A new empty cache. For bf16, a backend with device-resident caches (MLX) gets one of those.
     *
     * @param maxTokens most tokens it may hold (prompt + max_tokens, capped by the model context)
     */
    public static KvCache create(KvScheme scheme, AttentionShape shape, ComputeBackend backend, int maxTokens) {
        return switch (scheme) {
            case KvScheme.Bf16 b -> backend.newDeviceKv(shape.layers(), shape.numHeads(), shape.numKvHeads(),
                            shape.headDim(), maxTokens)
                    .<KvCache>map(device -> new DeviceBf16KvCache(shape, device))
                    .orElseGet(() -> new Bf16KvCache(shape, backend, maxTokens));
            case KvScheme.Turbo t -> throw new UnsupportedOperationException(
                    "the " + t.id() + " KV cache is not built yet; use bf16");
            case KvScheme.Uniform u -> throw new UnsupportedOperationException(
                    "the " + u.id() + " KV cache is not built yet; use bf16");
        };
    }
}
