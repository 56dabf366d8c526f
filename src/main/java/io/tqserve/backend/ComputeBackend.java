package io.tqserve.backend;

import java.util.Optional;
import java.util.function.IntConsumer;

/**
 * The compute SPI the transformer runs on. The CPU backend ({@code backend.cpu.CpuBackend}) implements it with
 * Vector API kernels on a dedicated thread pool; an MLX backend implements it through MLX-C.
 */
public interface ComputeBackend extends AutoCloseable {
    /** Short name: "cpu" or "mlx". */
    String name();

    /** One line saying what was chosen and why (vector width, threads, library path). */
    String describe();

    /** The kernels this backend uses on the caller's thread. */
    Kernels kernels();

    /** Worker threads used for parallel work. */
    int threads();

    /**
     * out (rows, w.rows()) = x (rows, w.cols()) · wᵀ. The weight matrix is read once for all rows, so a batch of
     * rows costs one pass over the weights (a matrix-matrix product, not rows matrix-vector products).
     */
    void matmul(Matrix w, float[] x, int rows, float[] out);

    /**
     * Several products of the same input as one pass (q/k/v, gate/up): {@code outs[i] = x · ws[i]ᵀ}, each output
     * with exactly the bits {@link #matmul} gives it, so fusing changes no result. One hand-off to the threads instead
     * of one per matrix. Default: one {@link #matmul} per matrix.
     */
    default void matmuls(Matrix[] ws, float[] x, int rows, float[][] outs) {
        for (int i = 0; i < ws.length; i++) {
            matmul(ws[i], x, rows, outs[i]);
        }
    }

    /**
     * Told once per loaded model which weight matrices its forward passes will multiply, so the backend may keep a
     * copy in the layout its kernels read fastest (the CPU backend: bf16 rows interleaved for the decode kernel).
     * Results do not change. Default: nothing.
     */
    default void prepare(java.util.Collection<Matrix> weights) {
    }

    /** Runs body(i) for i in [0, n) on the backend's pool and waits; the caller's thread takes part. */
    void parallelFor(int n, IntConsumer body);

    /**
     * A whole-model forward on the backend's device, or empty when this backend runs the Java forward (the CPU
     * backend). Callers fall back to the Java forward when empty.
     */
    default Optional<DeviceDecoder> openDecoder(DecoderSpec spec) {
        return Optional.empty();
    }

    /** A device-resident bf16 KV cache, or empty when KV caches live in Java-managed memory. */
    default Optional<DeviceKv> newDeviceKv(int layers, int numHeads, int numKvHeads, int headDim, int maxTokens) {
        return Optional.empty();
    }

    /**
     * A device-resident TurboQuant KV cache (encoded on the device, attended by the device decoder), or empty when
     * turbo caches live in Java-managed memory. Its export format is the Java TurboQuant cache's, byte for byte.
     */
    default Optional<DeviceKv> newDeviceTurboKv(DeviceTurboSpec spec) {
        return Optional.empty();
    }

    /**
     * Takes the device for the calling thread until the returned guard is closed: a forward pass takes it once,
     * so two lanes' passes do not interleave on one device (fairly: the longest waiter goes next). Reentrant; a
     * no-op on the CPU backend, whose kernels need no exclusion.
     */
    default DeviceLock lockDevice() {
        return DeviceLock.NONE;
    }

    /** Told by a lane that has nothing to run: a device backend returns cached buffers to the system. */
    default void onIdle() {
    }

    /**
     * Whether the model's weights live in a GPU's memory (MLX on Metal or CUDA), so that the host's memory bandwidth
     * does not bound a decode step; false on the CPU and on MLX's CPU device.
     */
    default boolean gpuDevice() {
        return false;
    }

    /** Counters of the device (evaluations, bytes copied to Java, memory); {@link DeviceStats#NONE} on the CPU. */
    default DeviceStats deviceStats() {
        return DeviceStats.NONE;
    }

    /** A held device; {@link #close} releases it. */
    interface DeviceLock extends AutoCloseable {
        DeviceLock NONE = () -> {
        };

        @Override
        void close();
    }

    @Override
    void close();
}
