package io.tqserve.engine;

import io.tqserve.kv.KvCache;

/** Runs before each sampling step of each sequence. Production uses {@link #NONE}; tests inject faults. */
@FunctionalInterface
public interface StepHook {
    StepHook NONE = (request, generated) -> {
    };

    void beforeSample(GenerationRequest request, int generated);

    /**
     * Sees each sequence's KV cache when the lane allocates it and returns the cache the sequence uses. Tests wrap
     * it to fail inside the forward pass, or throw here to fail the allocation.
     */
    default KvCache decorateCache(GenerationRequest request, KvCache cache) {
        return cache;
    }
}
