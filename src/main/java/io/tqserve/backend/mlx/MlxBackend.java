package io.tqserve.backend.mlx;

import io.tqserve.backend.ComputeBackend;
import io.tqserve.backend.DecoderSpec;
import io.tqserve.backend.DeviceDecoder;
import io.tqserve.backend.DeviceKv;
import io.tqserve.backend.DeviceStats;
import io.tqserve.backend.Kernels;
import io.tqserve.backend.Matrix;
import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxException;
import io.tqserve.backend.mlx.ffm.MlxCustomKernel;
import io.tqserve.backend.mlx.ffm.MlxCustomKernel.Gpu;
import io.tqserve.backend.mlx.ffm.MlxScope;
import java.nio.file.Path;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.IntConsumer;

/**
 * The MLX backend: MLX-C through {@code java.lang.foreign}, on MLX's default device (the GPU on Apple silicon,
 * the CPU elsewhere). It offers a {@link DeviceDecoder} (the whole Llama-family forward as MLX ops, weights
 * loaded once by MLX from the model's safetensors, one graph per batched step, sampling on the device) and
 * device-resident KV caches in the compute dtype. The SPI's per-kernel calls still work: a matmul against a
 * weight the decoder holds runs on MLX against that same array (no second copy), the other kernels on a Java CPU
 * backend, so the Java forward runs on it too, e.g. for KV schemes that have no device cache.
 *
 * <p>All MLX work runs through the backend's {@link MlxDevice}, the device's one owner (a fair lock, taken once
 * per forward pass).
 */
public final class MlxBackend implements ComputeBackend {
    /** Metal's key for the recommended working set ({@code mlx_device_info_get_size}). */
    static final String RECOMMENDED_KEY = "max_recommended_working_set_size";

    private final Mlx mlx;
    private final CpuBackend cpu;
    private final MlxOptions options;
    private final MlxDevice device;
    private final Map<java.util.List<Integer>, MlxKvPool> kvPools = new java.util.HashMap<>(); // by shape
    private final Map<Matrix, MlxLinear> deviceWeights = new IdentityHashMap<>(); // Matrix -> the decoder's arrays
    private final long wiredLimit;
    private final MlxTurboKernels turboKernels; // null: the ops path

    /** Applies the options' wired and cache limits to MLX (process-wide settings of the runtime). */
    public MlxBackend(Mlx mlx, CpuBackend cpu, MlxOptions options) {
        this.mlx = mlx;
        this.cpu = cpu;
        this.options = options;
        this.device = new MlxDevice(mlx);
        long wired = options.wiredLimit() == MlxOptions.RECOMMENDED
                ? mlx.deviceInfoSize(RECOMMENDED_KEY).orElse(0L) : options.wiredLimit();
        if (wired > 0) {
            mlx.setWiredLimit(wired); // MLX refuses a limit above the system's wired limit, with a message
        }
        this.wiredLimit = wired;
        if (options.cacheLimit() != MlxOptions.MLX_DEFAULT) {
            mlx.setCacheLimit(options.cacheLimit());
        }
        Gpu gpu = kernelLanguage(mlx, options.turboKernel());
        this.turboKernels = gpu == null ? null : openTurboKernels(mlx, gpu);
    }

    /** Test seam: the given TurboQuant decode kernels (e.g. emulated on the CPU) in place of MLX's. */
    MlxBackend(Mlx mlx, CpuBackend cpu, MlxOptions options, MlxTurboKernels kernels) {
        this.mlx = mlx;
        this.cpu = cpu;
        this.options = options;
        this.device = new MlxDevice(mlx);
        this.wiredLimit = 0;
        this.turboKernels = kernels;
    }

    /**
     * The GPU language of the TurboQuant decode kernels {@code asked} resolves to here, or null for the ops path:
     * auto takes Metal or CUDA where MLX runs on that back-end, else ops; metal and cuda are refused, naming the
     * setting, where MLX cannot run them.
     */
    static Gpu kernelLanguage(Mlx mlx, MlxOptions.TurboKernel asked) {
        return switch (asked) {
            case OPS -> null;
            case AUTO -> MlxCustomKernel.available(mlx, Gpu.METAL) ? Gpu.METAL
                    : MlxCustomKernel.available(mlx, Gpu.CUDA) ? Gpu.CUDA : null;
            case METAL, CUDA -> {
                kernelRefusal(mlx, asked).ifPresent(why -> {
                    throw new IllegalStateException(why);
                });
                yield asked == MlxOptions.TurboKernel.METAL ? Gpu.METAL : Gpu.CUDA;
            }
        };
    }

    private static MlxTurboKernels openTurboKernels(Mlx mlx, Gpu gpu) {
        try {
            return MlxTurboKernels.open(mlx, gpu);
        } catch (MlxException e) {
            throw new IllegalStateException("tqserve.backend.mlx.turbo-kernel=" + gpu.wireName()
                    + ": MLX refused the kernels: " + e.getMessage(), e);
        }
    }

    /** Why turbo-kernel=metal cannot run on this MLX (no Metal device), or empty when it can. */
    public static Optional<String> metalRefusal(Mlx mlx) {
        return kernelRefusal(mlx, MlxOptions.TurboKernel.METAL);
    }

    /**
     * Why {@code asked} (metal or cuda) cannot run on this MLX (no such back-end on its device), or empty when it
     * can; auto and ops always run.
     */
    public static Optional<String> kernelRefusal(Mlx mlx, MlxOptions.TurboKernel asked) {
        if (!asked.gpuKernel()) {
            return Optional.empty();
        }
        Gpu gpu = asked == MlxOptions.TurboKernel.METAL ? Gpu.METAL : Gpu.CUDA;
        String what = gpu == Gpu.METAL ? "MLX on a Metal device" : "MLX on a CUDA device";
        return MlxCustomKernel.available(mlx, gpu) ? Optional.empty()
                : Optional.of("tqserve.backend.mlx.turbo-kernel=" + asked.wireName() + " needs " + what + ", and "
                        + mlx.libraryFile() + " runs on " + mlx.device() + " without "
                        + (gpu == Gpu.METAL ? "Metal" : "CUDA") + "; use tqserve.backend.mlx.turbo-kernel=auto or ops");
    }

    /** The GPU kernels of decode-step TurboQuant attention, or null for the ops path. */
    MlxTurboKernels turboKernels() {
        return turboKernels;
    }

    /** The TurboQuant attention path decode steps take: ops, metal or cuda (turbo-kernel=auto resolved). */
    public String turboKernelPath() {
        return turboKernels == null ? "ops" : turboKernels.gpu().wireName();
    }

    /**
     * Opens the MLX-C library at {@code library}; Java-side kernels run on a CPU backend of {@code threads}
     * threads (0 = physical cores).
     */
    public static MlxBackend open(Path library, int threads, MlxOptions options) {
        Mlx mlx = Mlx.open(library);
        CpuBackend cpu = CpuBackend.create(threads);
        try {
            return new MlxBackend(mlx, cpu, options);
        } catch (RuntimeException e) {
            cpu.close();
            throw e;
        }
    }

    public Mlx mlx() {
        return mlx;
    }

    public MlxOptions options() {
        return options;
    }

    /** The compute dtype for weights stored as {@code stored}. */
    MlxDtype computeDtype(MlxDtype stored) {
        return options.dtype() == MlxOptions.Dtype.FLOAT32 ? MlxDtype.FLOAT32 : stored;
    }

    /** Whether MLX computes on its CPU device (no Metal): matmuls there run through BLAS or MLX's own loops. */
    boolean cpuDevice() {
        return mlx.device().startsWith("Device(cpu");
    }

    /**
     * The memory the device should hold at most: Metal's recommended working set when the device reports one,
     * else MLX's memory limit (on the CPU device 80 % of the machine's memory).
     */
    public static long deviceMemory(Mlx mlx) {
        OptionalLong recommended = mlx.deviceInfoSize(RECOMMENDED_KEY);
        return recommended.isPresent() ? recommended.getAsLong() : mlx.memoryLimit();
    }

    /** Where {@link #deviceMemory} comes from, for messages. */
    public static String deviceMemorySource(Mlx mlx) {
        return mlx.deviceInfoSize(RECOMMENDED_KEY).isPresent() ? "the device's recommended working set"
                : "MLX's memory limit on " + mlx.device();
    }

    /** The wired limit applied at start (0 = none). */
    public long wiredLimit() {
        return wiredLimit;
    }

    @Override
    public String name() {
        return "mlx";
    }

    @Override
    public boolean gpuDevice() {
        return !cpuDevice();
    }

    @Override
    public String describe() {
        return "mlx: MLX " + mlx.version() + " on " + mlx.device() + " via " + mlx.libraryFile() + ", "
                + options.dtype().wireName() + " dtype, TurboQuant attention " + turboKernelPath()
                + (options.turboKernel() == MlxOptions.TurboKernel.AUTO ? " (auto)" : "")
                + ", wired limit " + (wiredLimit >> 20) + " MB; Java kernels "
                + cpu.describe();
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

    @Override
    public DeviceLock lockDevice() {
        return device.hold();
    }

    /** The owner of the device: every MLX call of this backend runs through it. */
    MlxDevice device() {
        return device;
    }

    @Override
    public void onIdle() {
        device.heldRun(mlx::clearCache);
    }

    @Override
    public DeviceStats deviceStats() {
        return new DeviceStats(mlx.evaluations(), mlx.bytesToJava(), mlx.activeMemory(), mlx.peakMemory(),
                mlx.cacheMemory(), mlx.opsIssued());
    }

    /** Makes {@link #matmul} against {@code m} use the decoder's device weight {@code lin} (dense or quantized). */
    void registerWeight(Matrix m, MlxLinear lin) {
        synchronized (deviceWeights) {
            deviceWeights.put(m, lin);
        }
    }

    void unregisterWeights(Iterable<Matrix> ms) {
        synchronized (deviceWeights) {
            for (Matrix m : ms) {
                deviceWeights.remove(m);
            }
        }
    }

    /**
     * out = x · wᵀ: on the MLX device against the decoder's arrays when the weight is one the device decoder
     * holds (a quantized weight as a quantized matmul; nothing is copied to the device but x), else with the Java
     * kernels on the mapped weight.
     */
    @Override
    public void matmul(Matrix w, float[] x, int rows, float[] out) {
        MlxLinear lin;
        synchronized (deviceWeights) {
            lin = deviceWeights.get(w);
        }
        if (lin == null) {
            cpu.matmul(w, x, rows, out);
            return;
        }
        device.run(s -> {
            MlxArray xa = s.fromFloatsAt(x, 0, rows * w.cols(), rows, w.cols());
            MlxArray y = lin.apply(s, xa.dtype() == lin.dtype() ? xa : s.astype(xa, lin.dtype()));
            s.copyFloats(y, out, 0);
        });
    }

    @Override
    public Optional<DeviceDecoder> openDecoder(DecoderSpec spec) {
        return Optional.of(MlxDecoder.open(this, spec));
    }

    /** The pool of bf16 K/V pages of caches of this shape (one per shape, made on first use). */
    MlxKvPool kvPool(int layers, int numKvHeads, int headDim) {
        synchronized (kvPools) {
            return kvPools.computeIfAbsent(java.util.List.of(layers, numKvHeads, headDim),
                    k -> new MlxKvPool(this, layers, numKvHeads, headDim));
        }
    }

    @Override
    public Optional<DeviceKv> newDeviceKv(int layers, int numHeads, int numKvHeads, int headDim, int maxTokens) {
        return Optional.of(new MlxKvCache(this, layers, numHeads, numKvHeads, headDim, maxTokens));
    }

    @Override
    public Optional<DeviceKv> newDeviceTurboKv(io.tqserve.backend.DeviceTurboSpec spec) {
        return Optional.of(new MlxTurboKvCache(this, spec));
    }

    @Override
    public void close() {
        device.heldRun(() -> {
            synchronized (deviceWeights) {
                deviceWeights.clear();
            }
            synchronized (kvPools) {
                kvPools.values().forEach(MlxKvPool::close);
            }
            cpu.close();
            if (turboKernels != null) {
                turboKernels.close();
            }
        });
    }
}
