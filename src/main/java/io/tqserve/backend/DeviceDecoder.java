package io.tqserve.backend;

import java.util.List;

/**
 * A whole decoder forward pass on a backend's device (weights, activations and KV cache all device-resident),
 * offered by backends that can do better than the Java forward's per-kernel calls.
 */
public interface DeviceDecoder extends AutoCloseable {
    /** One line: device, precision, weight bytes. */
    String describe();

    /**
     * Runs {@code tokens[from .. from+count)} of one sequence at positions {@code kv.length() ..} and stores their
     * K/V in {@code kv} (committed later by {@link DeviceKv#advance}).
     *
     * @param kv           a cache made by the same backend's {@link ComputeBackend#newDeviceKv}
     * @param allLogits    logits for every row instead of the last row only
     * @param logits       receives (1 or count, vocabSize) logits at {@code logitsOffset}
     */
    default void forward(DeviceKv kv, int[] tokens, int from, int count, boolean allLogits, float[] logits,
            int logitsOffset) {
        forward(List.of(new DeviceChunk(kv, tokens, from, count, allLogits, null)), logits, logitsOffset,
                new DeviceSample[1]);
    }

    /**
     * Runs every chunk as one device graph, evaluated once: the projections and the MLP over all rows together,
     * RoPE at each sequence's own offset, attention per sequence against its cache. Stores every chunk's K/V
     * (committed later by {@link DeviceKv#advance}).
     *
     * @param logits  receives, for each chunk without a sampler, its {@link DeviceChunk#logitRows} rows of
     *                vocabSize logits, at {@code logitsOffset} + (logit rows of the chunks before it) · vocabSize;
     *                the rows of sampled chunks are left as they are
     * @param samples receives at index i the token sampled for chunk i (null for chunks without a sampler)
     */
    void forward(List<DeviceChunk> chunks, float[] logits, int logitsOffset, DeviceSample[] samples);

    /**
     * Builds the same graph as {@link #forward}, queues its evaluation and returns without waiting (mlx-lm's
     * {@code async_eval}): the caller can queue the next step, fed this step's {@link PendingStep#token}s, before
     * it reads this one. The chunks' K/V are stored as by {@link #forward}; the samplers' state moves on.
     */
    PendingStep submit(List<DeviceChunk> chunks);

    /** A sampler whose state lives on the device, for {@link DeviceChunk#sampler}. */
    DeviceSampler newSampler(SamplingSpec spec);

    @Override
    void close();
}
