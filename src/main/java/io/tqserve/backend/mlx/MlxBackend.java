package io.tqserve.backend.mlx;

import io.tqserve.backend.ComputeBackend;
import io.tqserve.backend.DecoderSpec;
import io.tqserve.backend.DeviceDecoder;
import io.tqserve.backend.DeviceKv;
import io.tqserve.backend.Kernels;
import io.tqserve.backend.Matrix;
import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxScope;
import io.tqserve.backend.mlx.ffm.MlxStore;
import java.nio.file.Path;
import java.util.IdentityHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntConsumer;

/**
 * The MLX backend: MLX-C through {@code java.lang.foreign}, on MLX's default device (the GPU on Apple silicon,
 * the CPU elsewhere). It offers a {@link DeviceDecoder} (the whole Llama-family forward as MLX ops, weights
 * loaded by MLX from the model's safetensors) and device-resident bf16 KV caches; the SPI's per-kernel calls
 * still work (matmul through MLX, the other kernels on a Java CPU backend), so the Java forward runs on it too,
 * e.g. for KV schemes that have no device cache.
 *
 * <p>All MLX work is serialised by one lock: a forward pass is one graph evaluated at once, and MLX's CPU
 * backend parallelises inside it.
 */
public final class MlxBackend implements ComputeBackend {
    /** {@code -Dtqserve.mlx.precision=float32|native}: compute dtype of the device decoder (default float32). */
    public static final String PRECISION_PROPERTY = "tqserve.mlx.precision";

    /** Compute dtype of the device forward. */
    public enum Precision {
        /** Weights converted to float32 once at load; activations float32 (the tested configuration). */
        FLOAT32,
        /** Weights and activations in the checkpoint's dtype (bf16/f16), as mlx-lm runs; half the memory. */
        NATIVE;

        public static Precision parse(String s) {
            return switch (s.toLowerCase(Locale.ROOT)) {
                case "float32", "fp32", "f32" -> FLOAT32;
                case "native" -> NATIVE;
                default -> throw new IllegalArgumentException(
                        PRECISION_PROPERTY + "=" + s + " is not one of float32, native");
            };
        }
    }

    private final Mlx mlx;
    private final CpuBackend cpu;
    private final Precision precision;
    final ReentrantLock lock = new ReentrantLock();
    private final MlxStore matrixStore;
    private final Map<Matrix, MlxArray> matrices = new IdentityHashMap<>(); // Matrix -> (cols, rows) transposed view

    public MlxBackend(Mlx mlx, CpuBackend cpu, Precision precision) {
        this.mlx = mlx;
        this.cpu = cpu;
        this.precision = precision;
        this.matrixStore = mlx.newStore();
    }

    /**
     * Opens the MLX-C library at {@code library}; Java-side kernels run on a CPU backend of {@code threads}
     * threads (0 = physical cores). Precision from {@value #PRECISION_PROPERTY}.
     */
    public static MlxBackend open(Path library, int threads) {
        Precision p = Precision.parse(System.getProperty(PRECISION_PROPERTY, "float32"));
        Mlx mlx = Mlx.open(library);
        return new MlxBackend(mlx, CpuBackend.create(threads), p);
    }

    public Mlx mlx() {
        return mlx;
    }

    public Precision precision() {
        return precision;
    }

    /** The compute dtype for weights stored as {@code stored}. */
    MlxDtype computeDtype(MlxDtype stored) {
        return precision == Precision.FLOAT32 ? MlxDtype.FLOAT32 : stored;
    }

    @Override
    public String name() {
        return "mlx";
    }

    @Override
    public String describe() {
        return "mlx: MLX " + mlx.version() + " on " + mlx.device() + " via " + mlx.libraryFile() + ", "
                + precision.name().toLowerCase(Locale.ROOT) + " compute; Java kernels " + cpu.describe();
    }

    @Override
    public Kernels kernels() {
        return cpu.kernels();
    }

    @Override
    public int threads() {
        return cpu.threads();
    }

    @Override
    public void parallelFor(int n, IntConsumer body) {
        cpu.parallelFor(n, body);
    }

    /** out = x · wᵀ on the MLX device; the weight is copied to MLX once, on first use. */
    @Override
    public void matmul(Matrix w, float[] x, int rows, float[] out) {
        lock.lock();
        try (MlxScope s = mlx.newScope()) {
            MlxArray wt = matrices.get(w);
            if (wt == null) {
                MlxArray m = s.fromSegment(w.data(), dtypeOf(w), w.rows(), w.cols());
                wt = matrixStore.keep(s.transpose(s.astype(m, MlxDtype.FLOAT32), 1, 0));
                s.eval(wt);
                matrices.put(w, wt);
            }
            MlxArray y = s.matmul(s.fromFloatsAt(x, 0, rows * w.cols(), rows, w.cols()), wt);
            s.copyFloats(y, out, 0);
        } finally {
            lock.unlock();
        }
    }

    private static MlxDtype dtypeOf(Matrix w) {
        return switch (w.dtype()) {
            case BF16 -> MlxDtype.BFLOAT16;
            case F16 -> MlxDtype.FLOAT16;
            case F32 -> MlxDtype.FLOAT32;
            case U32 -> throw new UnsupportedOperationException(
                    "quantized weights are not supported on the MLX backend yet: use tqserve.backend.type=cpu");
        };
    }

    @Override
    public Optional<DeviceDecoder> openDecoder(DecoderSpec spec) {
        return Optional.of(MlxDecoder.open(this, spec));
    }

    @Override
    public Optional<DeviceKv> newDeviceKv(int layers, int numHeads, int numKvHeads, int headDim, int maxTokens) {
        return Optional.of(new MlxKvCache(this, layers, numHeads, numKvHeads, headDim, maxTokens));
    }

    @Override
    public void close() {
        lock.lock();
        try {
            matrices.clear();
            matrixStore.close();
            cpu.close();
        } finally {
            lock.unlock();
        }
    }
}
