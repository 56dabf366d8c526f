package io.tqserve.backend;

import java.lang.foreign.MemorySegment;

/**
 * The KV-cache contract: the keys and values of all layers of one sequence. It is stated once, here in the backend
 * SPI, so that both the Java-managed caches ({@code kv.KvCache}) and the device-resident ones ({@link DeviceKv})
 * implement the same thing; {@link AbstractSequenceKv} holds the bookkeeping and argument checks they share.
 *
 * <p>A forward pass over {@code rows} new tokens calls {@link #attend} once per layer (positions
 * {@code length() .. length()+rows-1}), then {@link #advance}. The first prefill of a fresh sequence (an empty
 * cache) attends over the chunk's own full-precision K/V, then stores them in the cache's format; every later step
 * (decode, or a prefill continuing a cached prefix) stores first and attends over what the cache holds.
 */
public interface SequenceKv extends AutoCloseable {
    /** Committed tokens. */
    int length();

    /** Most tokens this cache may hold. */
    int maxTokens();

    /** Bytes allocated (committed tokens plus the unused tail of the allocation). */
    long bytesAllocated();

    /**
     * Attention of layer {@code layer} for {@code rows} new tokens whose rows start at {@code rowOffset} in the
     * given arrays; stores their K/V.
     *
     * @param q   (N, numHeads·headDim), RoPE applied
     * @param k   (N, kvDim), RoPE applied
     * @param v   (N, kvDim)
     * @param out (N, numHeads·headDim) written for rows [rowOffset, rowOffset+rows)
     */
    void attend(int layer, int rowOffset, int rows, float[] q, float[] k, float[] v, float[] out);

    /** Commits the {@code rows} tokens the last forward pass (or import) stored in every layer. */
    void advance(int rows);

    /**
     * Copies tokens [from, from+count) of one layer to {@code dst} in the scheme's canonical entry format:
     * (count, numKvHeads, entry bytes) token-major. The entry of one token and head is the codec's per-token-per-head
     * entry (for bf16: head_dim K values then head_dim V values, bf16 little-endian). Used by snapshots and the
     * prompt cache.
     */
    void exportLayer(int layer, int from, int count, MemorySegment dst);

    /**
     * Stores {@code count} tokens of one layer from {@code src} (the {@link #exportLayer} format) at positions
     * length() .. length()+count-1. After every layer has been imported, {@link #advance}(count) commits them.
     */
    void importLayer(int layer, int count, MemorySegment src);

    /** Drops every token from {@code tokens} on (prefix reuse); keeps the allocation. */
    void truncate(int tokens);

    /** Frees the cache's memory; the cache is unusable afterwards. Idempotent. */
    @Override
    void close();
}
