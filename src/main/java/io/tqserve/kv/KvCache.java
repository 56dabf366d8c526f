package io.tqserve.kv;

import io.tqserve.backend.SequenceKv;

/**
 * The KV cache of one sequence, all layers, in one {@link KvScheme}: the {@link SequenceKv} contract (attend,
 * advance, export/import, truncate, close) plus what the scheme fixes — its byte layout and the bytes its
 * committed tokens occupy.
 */
public interface KvCache extends SequenceKv {

    AttentionShape shape();

    /** The exact byte layout (bytes per token) of this cache. */
    KvLayout layout();

    /**
     * {@link #attend}, split: stores the pass's K/V now and returns its attention as tasks for the caller to run
     * ({@link AttentionTasks}), so that a batch of caches attends in one hand-off to the kernel threads. Running every
     * task gives exactly what {@link #attend} writes to {@code out}. The default attends at once and returns
     * {@link AttentionTasks#NONE} (decorators, device caches).
     */
    default AttentionTasks stage(int layer, int rowOffset, int rows, float[] q, float[] k, float[] v, float[] out) {
        attend(layer, rowOffset, rows, q, k, v, out);
        return AttentionTasks.NONE;
    }

    default KvScheme scheme() {
        return layout().scheme();
    }

    /**
     * Bytes the committed tokens occupy: {@code layout().bytesFor(length())}, except in a quantized cache that keeps
     * its first quantizedKvStart tokens in bf16, which counts those at bf16's size.
     */
    default long bytesUsed() {
        return layout().bytesFor(length());
    }
}
