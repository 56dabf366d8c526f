package io.tqserve.backend;

/**
 * A KV cache held by a backend's device (MLX arrays), for all layers of one sequence: the {@link SequenceKv}
 * contract, made by {@link ComputeBackend#newDeviceKv} (bf16) or {@link ComputeBackend#newDeviceTurboKv} (TurboQuant)
 * and run by the same backend's {@link DeviceDecoder}. Its export format is its scheme's canonical entry
 * ({@code docs/kv-format.md}).
 */
public interface DeviceKv extends SequenceKv {
}
