package io.tqserve.backend;

/**
 * A device step that has been queued for evaluation ({@link DeviceDecoder#submit}) and not yet read. Used by the
 * thread that submitted it; {@link #read} or {@link #close} ends it.
 */
public interface PendingStep extends AutoCloseable {
    /** The token chunk {@code i} samples, as the input of a later step (before or after {@link #read}). */
    DeviceToken token(int i);

    /**
     * Waits for the step and copies its results: the logits rows of chunks without a sampler (laid out as
     * {@link DeviceDecoder#forward} does, at offset 0 of the returned array) and {@code samples[i]} for sampled
     * chunks. Ends the step.
     */
    float[] read(DeviceSample[] samples);

    /** Ends the step without reading it. Idempotent. */
    @Override
    void close();
}
