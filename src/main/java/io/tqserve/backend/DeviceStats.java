package io.tqserve.backend;

/**
 * Counters of a backend's device, read at one moment; all zero on the CPU backend (no device).
 *
 * @param evaluations graphs handed to the device for evaluation so far
 * @param bytesToJava bytes copied from device arrays into Java memory so far
 * @param activeBytes device memory in use now
 * @param peakBytes   most device memory in use since start (or the last reset)
 * @param cacheBytes  freed device buffers kept for reuse
 * @param ops         operations issued to the device's graphs so far (each op call and each array made from Java)
 */
public record DeviceStats(long evaluations, long bytesToJava, long activeBytes, long peakBytes, long cacheBytes,
        long ops) {
    public static final DeviceStats NONE = new DeviceStats(0, 0, 0, 0, 0, 0);

    /** What happened between {@code before} and this reading (counters subtracted, memory as read now). */
    public DeviceStats since(DeviceStats before) {
        return new DeviceStats(evaluations - before.evaluations, bytesToJava - before.bytesToJava, activeBytes,
                peakBytes, cacheBytes, ops - before.ops);
    }
}
