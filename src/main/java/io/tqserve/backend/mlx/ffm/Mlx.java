package io.tqserve.backend.mlx.ffm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One loaded MLX-C runtime: the method handles, the default device, the error handler and counters. MLX keeps
 * process-wide state (allocator, device, the error handler), so a runtime is opened once per library file and
 * lives until the process ends; its device handle is the only MLX-C object it never frees.
 *
 * <p>Work happens in {@link MlxScope}s (thread-confined, with the thread's default stream: MLX 0.31 keeps one
 * default stream per thread, and on Metal a stream's command encoder belongs to the thread that created it);
 * arrays that outlive a call live in an {@link MlxStore}.
 */
public final class Mlx {
    private static final Map<Path, Mlx> OPEN = new ConcurrentHashMap<>();

    final MlxLibrary lib;
    final MlxNative n;
    final MlxOpsNative ops;
    private final MlxKernelNative[] kernels = new MlxKernelNative[MlxCustomKernel.Gpu.values().length]; // lazily
    private final Arena arena = Arena.ofShared(); // the device handle; never closed (process lifetime)
    private final MemorySegment device;           // mlx_device, the default device
    private final String version;
    private final String deviceName;
    private final AtomicLong liveArrays = new AtomicLong();
    private final AtomicLong evaluations = new AtomicLong();
    private final AtomicLong bytesToJava = new AtomicLong();
    private final AtomicLong opsIssued = new AtomicLong();

    private Mlx(MlxLibrary lib) {
        this.lib = lib;
        this.n = new MlxNative(lib);
        this.ops = new MlxOpsNative(lib);
        MlxErrors.install(lib, n);
        try {
            device = (MemorySegment) n.deviceNew.invokeExact((java.lang.foreign.SegmentAllocator) arena);
            MlxErrors.check((int) n.getDefaultDevice.invokeExact(device), "mlx_get_default_device");
            version = readString(s -> (int) n.version.invokeExact(s), "mlx_version");
            deviceName = readString(s -> (int) n.deviceToString.invokeExact(s, device), "mlx_device_tostring");
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
        requireSupported(version, lib.file());
    }

    /**
     * The handles follow MLX-C 0.4–0.6 (MLX 0.30–0.31). MLX-C 0.3 (MLX 0.29) declared SDPA's mask as a vector of
     * arrays, which a call through these handles would misread, so older libraries are refused here; MLX-C has no
     * version call of its own, and each MLX-C release pins one MLX release, so MLX's version stands in for it.
     */
    static void requireSupported(String mlxVersion, Path file) {
        String[] parts = mlxVersion.split("[^0-9]+", 4);
        int major = parts.length > 0 && !parts[0].isEmpty() ? Integer.parseInt(parts[0]) : 0;
        int minor = parts.length > 1 && !parts[1].isEmpty() ? Integer.parseInt(parts[1]) : 0;
        if (major == 0 && minor < 30) {
            throw new MlxException(file + " is built on MLX " + mlxVersion + "; tqserve needs MLX-C 0.4 or newer "
                    + "(MLX 0.30 or newer)");
        }
    }

    /** The handles of MLX's custom-kernel API in {@code gpu}'s language ({@link MlxCustomKernel}), on first use. */
    synchronized MlxKernelNative kernels(MlxCustomKernel.Gpu gpu) {
        MlxKernelNative k = kernels[gpu.ordinal()];
        if (k == null) {
            k = new MlxKernelNative(lib, gpu);
            kernels[gpu.ordinal()] = k;
        }
        return k;
    }

    /** Opens (once per file) the MLX-C library at {@code libraryFile}. */
    public static Mlx open(Path libraryFile) {
        Path key = libraryFile.toAbsolutePath().normalize();
        return OPEN.computeIfAbsent(key, p -> new Mlx(MlxLibrary.load(p)));
    }

    /** A new thread-confined scope on this thread's default stream of the default device. */
    public MlxScope newScope() {
        return new MlxScope(this);
    }

    /** A new store for arrays that outlive one call (weights, KV caches); any thread may read them. */
    public MlxStore newStore() {
        return new MlxStore(this);
    }

    public Path libraryFile() {
        return lib.file();
    }

    /** MLX's version string, e.g. "0.31.2". */
    public String version() {
        return version;
    }

    /** The default device, e.g. "Device(gpu, 0)" on Apple silicon, "Device(cpu, 0)" elsewhere. */
    public String device() {
        return deviceName;
    }

    MemorySegment deviceHandle() {
        return device;
    }

    /** Bytes of MLX buffers in use (not counting MLX's free-buffer cache). */
    public long activeMemory() {
        return sizeStat(n.activeMemory, "mlx_get_active_memory");
    }

    public long peakMemory() {
        return sizeStat(n.peakMemory, "mlx_get_peak_memory");
    }

    /** Bytes MLX holds in its buffer cache for reuse. */
    public long cacheMemory() {
        return sizeStat(n.cacheMemory, "mlx_get_cache_memory");
    }

    /** Returns MLX's cached free buffers to the system. */
    public void clearCache() {
        try {
            MlxErrors.check((int) n.clearCache.invokeExact(), "mlx_clear_cache");
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
    }

    /** Returns MLX's peak-memory counter to the current active memory. */
    public void resetPeakMemory() {
        try {
            MlxErrors.check((int) n.resetPeakMemory.invokeExact(), "mlx_reset_peak_memory");
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
    }

    /** MLX's memory limit: allocations beyond it wait for running work (Metal) or are refused. */
    public long memoryLimit() {
        return sizeStat(n.memoryLimit, "mlx_get_memory_limit");
    }

    /**
     * Bytes MLX may keep wired (resident, never paged out) on Metal; 0 = none. No effect on the CPU device.
     *
     * @return the previous limit
     */
    public long setWiredLimit(long bytes) {
        return setLimit(n.setWiredLimit, bytes, "mlx_set_wired_limit");
    }

    /** Most bytes of freed buffers MLX keeps for reuse; returns the previous limit. */
    public long setCacheLimit(long bytes) {
        return setLimit(n.setCacheLimit, bytes, "mlx_set_cache_limit");
    }

    /** MLX's memory limit (see {@link #memoryLimit}); returns the previous limit. */
    public long setMemoryLimit(long bytes) {
        return setLimit(n.setMemoryLimit, bytes, "mlx_set_memory_limit");
    }

    private long setLimit(java.lang.invoke.MethodHandle h, long bytes, String name) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ValueLayout.JAVA_LONG);
            MlxErrors.check((int) h.invokeExact(out, bytes), name);
            return out.get(ValueLayout.JAVA_LONG, 0);
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
    }

    /**
     * A size the default device reports ({@code mlx_device_info_get_size}), e.g. {@code memory_size} or
     * {@code max_recommended_working_set_size} on Metal; empty when the device has no such key (MLX's CPU
     * device reports only its name and architecture).
     */
    public java.util.OptionalLong deviceInfoSize(String key) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment info = (MemorySegment) n.deviceInfoNew.invokeExact((java.lang.foreign.SegmentAllocator) a);
            MemorySegment infoPtr = a.allocate(MlxLibrary.DEVICE_INFO);
            MemorySegment.copy(info, 0, infoPtr, 0, MlxLibrary.DEVICE_INFO.byteSize());
            MlxErrors.check((int) n.deviceInfoGet.invokeExact(infoPtr, device), "mlx_device_info_get");
            MemorySegment filled = infoPtr; // mlx_device_info by value: the struct written through the pointer
            try {
                MemorySegment k = a.allocateFrom(key);
                MemorySegment flag = a.allocate(ValueLayout.JAVA_BOOLEAN);
                MlxErrors.check((int) n.deviceInfoHasKey.invokeExact(flag, filled, k), "mlx_device_info_has_key");
                if (!flag.get(ValueLayout.JAVA_BOOLEAN, 0)) {
                    return java.util.OptionalLong.empty();
                }
                MlxErrors.check((int) n.deviceInfoIsString.invokeExact(flag, filled, k), "mlx_device_info_is_string");
                if (flag.get(ValueLayout.JAVA_BOOLEAN, 0)) {
                    return java.util.OptionalLong.empty();
                }
                MemorySegment out = a.allocate(ValueLayout.JAVA_LONG);
                MlxErrors.check((int) n.deviceInfoGetSize.invokeExact(out, filled, k), "mlx_device_info_get_size");
                return java.util.OptionalLong.of(out.get(ValueLayout.JAVA_LONG, 0));
            } finally {
                MlxErrors.check((int) n.deviceInfoFree.invokeExact(filled), "mlx_device_info_free");
            }
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
    }

    /** Graphs handed to MLX for evaluation so far ({@code mlx_eval} and {@code mlx_async_eval} calls). */
    public long evaluations() {
        return evaluations.get();
    }

    /** Bytes copied from MLX arrays into Java memory so far (logits, tokens, exported KV). */
    public long bytesToJava() {
        return bytesToJava.get();
    }

    /**
     * MLX operations issued so far: each call of an op wrapper ({@link MlxOps}) and each array made from Java data,
     * i.e. the nodes added to MLX graphs.
     */
    public long opsIssued() {
        return opsIssued.get();
    }

    void opIssued() {
        opsIssued.incrementAndGet();
    }

    void evaluated() {
        evaluations.incrementAndGet();
    }

    void copiedToJava(long bytes) {
        bytesToJava.addAndGet(bytes);
    }

    /**
     * MLX-C array handles created through this runtime and not yet freed (each {@code _new} minus each
     * {@code _free}).
     */
    public long liveArrays() {
        return liveArrays.get();
    }

    void arrayCreated() {
        liveArrays.incrementAndGet();
    }

    void arrayFreed() {
        liveArrays.decrementAndGet();
    }

    private long sizeStat(java.lang.invoke.MethodHandle h, String name) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ValueLayout.JAVA_LONG);
            MlxErrors.check((int) h.invokeExact(out), name);
            return out.get(ValueLayout.JAVA_LONG, 0);
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
    }

    @FunctionalInterface
    private interface StringCall {
        int call(MemorySegment str) throws Throwable;
    }

    /** Calls a function that fills an {@code mlx_string*}, copies the text and frees the string. */
    private String readString(StringCall call, String name) throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment str = (MemorySegment) n.stringNew.invokeExact((java.lang.foreign.SegmentAllocator) a);
            try {
                MlxErrors.check(call.call(str), name);
                MemorySegment chars = (MemorySegment) n.stringData.invokeExact(str);
                return MlxErrors.checkPointer(chars, "mlx_string_data").reinterpret(1 << 16).getString(0);
            } finally {
                MlxErrors.check((int) n.stringFree.invokeExact(str), "mlx_string_free");
            }
        }
    }
}
