package io.tqserve.backend;

/**
 * A token a queued device step sampled, before Java has read it: a later step can take it as its input, so the
 * device never waits for Java between two decode steps ({@link DeviceDecoder#submit}).
 */
public interface DeviceToken {
}
