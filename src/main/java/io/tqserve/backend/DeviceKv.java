package io.tqserve.backend;

/**
 * A bf16 KV cache held by a backend's device (MLX arrays), for all layers of one sequence. The contract of
 * {@link #attend}, {@link #advance} and {@link #truncate} is the KV-cache contract of {@code kv.KvCache}: a
 * fresh prefill (empty cache) attends over its own full-precision K/V, then stores them; every later step
 * stores first and attends over what the cache holds.
 */
public interface DeviceKv extends AutoCloseable {
    /** Committed tokens. */
    int length();

    /** Most tokens the cache may hold. */
    int maxTokens();

    /** Bytes the device holds for this cache (committed tokens plus the unused tail of the allocation). */
    long bytesAllocated();

    /**
     * Attention of layer {@code layer} for {@code rows} new tokens from Java arrays (the Java forward on a device
     * backend); stores their K/V.
     *
     * @param q   (N, numHeads·headDim), RoPE applied
     * @param k   (N, kvDim), RoPE applied
     * @param v   (N, kvDim)
     * @param out (N, numHeads·headDim) written for rows [rowOffset, rowOffset+rows)
     */
    void attend(int layer, int rowOffset, int rows, float[] q, float[] k, float[] v, float[] out);

    /** Commits the {@code rows} tokens the last forward pass stored in every layer. */
    void advance(int rows);

    /**
     * Copies tokens [from, from+count) of one layer to {@code dst} as (count, numKvHeads, 2·headDim) bf16
     * little-endian: per token and head, headDim K values then headDim V values (the bf16 scheme's canonical
     * entry format of {@code kv.KvCache#exportLayer}).
     */
    void exportLayer(int layer, int from, int count, java.lang.foreign.MemorySegment dst);

    /**
     * Stores {@code count} tokens of one layer from {@code src} (the {@link #exportLayer} format) at positions
     * length() .. length()+count-1; {@link #advance}(count) commits them once every layer is imported.
     */
    void importLayer(int layer, int count, java.lang.foreign.MemorySegment src);

    /** Drops every token from {@code tokens} on. */
    void truncate(int tokens);

    /** Frees the device memory. Idempotent. */
    @Override
    void close();
}
