package io.tqserve.backend;

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
    void forward(DeviceKv kv, int[] tokens, int from, int count, boolean allLogits, float[] logits, int logitsOffset);

    @Override
    void close();
}
