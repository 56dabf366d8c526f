package io.tqserve.backend;

/**
 * A bf16 KV cache held by a backend's device (MLX arrays), for all layers of one sequence: the {@link SequenceKv}
 * contract, made by {@link ComputeBackend#newDeviceKv} and run by the same backend's {@link DeviceDecoder}. Its
 * export format is the bf16 scheme's canonical entry (per token and head, headDim K values then headDim V values).
 */
public interface DeviceKv extends SequenceKv {
}
