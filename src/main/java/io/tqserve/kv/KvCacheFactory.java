package io.tqserve.kv;

import io.tqserve.backend.ComputeBackend;

/** Creates the KV cache of a scheme. */
public final class KvCacheFactory {
    private KvCacheFactory() {
    }

    /**
     * A new empty cache.
     *
     * @param maxTokens most tokens it may hold (prompt + max_tokens, capped by the model context)
     */
    public static KvCache create(KvScheme scheme, AttentionShape shape, ComputeBackend backend, int maxTokens) {
        return switch (scheme) {
            case KvScheme.Bf16 b -> new Bf16KvCache(shape, backend, maxTokens);
            case KvScheme.Turbo t -> throw new UnsupportedOperationException(
                    "the " + t.id() + " KV cache is not built yet; use bf16");
            case KvScheme.Uniform u -> throw new UnsupportedOperationException(
                    "the " + u.id() + " KV cache is not built yet; use bf16");
        };
    }
}
