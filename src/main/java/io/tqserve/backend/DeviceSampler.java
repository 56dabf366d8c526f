package io.tqserve.backend;

/**
 * One sequence's sampling state on a device (PRNG key, penalty counts, logit bias), made by
 * {@link DeviceDecoder#newSampler}. Used by one sequence at a time; {@link #close} frees the device memory.
 */
public interface DeviceSampler extends AutoCloseable {
    @Override
    void close();
}
