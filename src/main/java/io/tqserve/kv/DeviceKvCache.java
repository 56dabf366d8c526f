package io.tqserve.kv;

import io.tqserve.backend.DeviceKv;
import java.lang.foreign.MemorySegment;

/**
 * A KV cache held on a backend's device ({@link DeviceBf16KvCache}, {@code turbo.DeviceTurboKvCache}): the
 * transformer hands {@link #device()} to the backend's device decoder, so a pass over it is one device graph. Every
 * {@code SequenceKv} call goes to the device cache, which checks its arguments.
 */
public interface DeviceKvCache extends KvCache {

    /** The device-side cache. */
    DeviceKv device();
    @Override
    default int length() {
        return device().length();
    }

    @Override
    default int maxTokens() {
        return device().maxTokens();
    }

    @Override
    default long bytesAllocated() {
        return device().bytesAllocated();
    }

    @Override
    default void attend(int layer, int rowOffset, int rows, float[] q, float[] k, float[] v, float[] out) {
        device().attend(layer, rowOffset, rows, q, k, v, out);
    }

    @Override
    default void advance(int rows) {
        device().advance(rows);
    }

    @Override
    default void exportLayer(int layer, int from, int count, MemorySegment dst) {
        device().exportLayer(layer, from, count, dst);
    }

    @Override
    default void importLayer(int layer, int count, MemorySegment src) {
        device().importLayer(layer, count, src);
    }

    @Override
    default void truncate(int tokens) {
        device().truncate(tokens);
    }

    @Override
    default void close() {
        device().close();
    }
}
