package io.tqserve.kv;

import io.tqserve.backend.DeviceKv;

/**
 * A KV cache held on a backend's device ({@link DeviceBf16KvCache}, {@code turbo.DeviceTurboKvCache}): the
 * transformer hands {@link #device()} to the backend's device decoder, so a pass over it is one device graph.
 */
public interface DeviceKvCache extends KvCache {

    /** The device-side cache. */
    DeviceKv device();
}
