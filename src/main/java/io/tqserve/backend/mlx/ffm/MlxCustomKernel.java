package io.tqserve.backend.mlx.ffm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * A GPU kernel run through MLX's custom-kernel API, in the Metal Shading Language ({@code mlx_fast_metal_kernel_*})
 * or CUDA ({@code mlx_fast_cuda_kernel_*}): the source is the kernel's body; MLX writes its signature from the input
 * and output names, the inputs' dtypes ({@code const device T* name} in Metal, {@code const T* name} in CUDA), the
 * {@code name_shape} arrays the body mentions and, in Metal, the attributes it uses
 * ({@code thread_position_in_grid}, ...), puts the header before it, compiles one instantiation per set of template
 * arguments (Metal template parameters, CUDA {@code constexpr}s; CUDA through NVRTC), and adds the kernel to the
 * graph like any other operation. The grid counts threads in both languages; on CUDA, MLX launches
 * ceil(grid / threadgroup) blocks, so a grid that is not a multiple of the threadgroup runs extra threads. On a
 * build without the language's back-end, creation or application fails with MLX's message.
 */
public final class MlxCustomKernel implements AutoCloseable {
    /** The GPU language of a kernel, after the MLX back-end that runs it. */
    public enum Gpu {
        METAL, CUDA;

        public String wireName() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    private final Mlx mlx;
    private final MlxKernelNative n;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment handle; // mlx_fast_metal_kernel by value
    private boolean closed;

    /** An output of one application: its shape and dtype. */
    public record Output(int[] shape, MlxDtype dtype) {
    }

    /** A template argument of one application: an int, or a bool when {@code bool} is set. */
    public record TemplateArg(String name, int value, boolean bool) {
        public static TemplateArg of(String name, int value) {
            return new TemplateArg(name, value, false);
        }

        public static TemplateArg of(String name, boolean value) {
            return new TemplateArg(name, value ? 1 : 0, true);
        }
    }

    private MlxCustomKernel(Mlx mlx, Gpu gpu, String name, List<String> inputs, List<String> outputs, String source,
            String header) {
        this.mlx = mlx;
        this.n = mlx.kernels(gpu);
        try {
            MemorySegment in = strings(inputs);
            MemorySegment out = strings(outputs);
            try {
                MemorySegment nm = arena.allocateFrom(name);
                MemorySegment src = arena.allocateFrom(source);
                MemorySegment hdr = arena.allocateFrom(header);
                // last argument: Metal's atomic_outputs (false), CUDA's dynamic shared memory bytes (0)
                handle = gpu == Gpu.METAL
                        ? (MemorySegment) n.kernelNew.invokeExact((SegmentAllocator) arena, nm, in, out, src, hdr, true,
                                false)
                        : (MemorySegment) n.kernelNew.invokeExact((SegmentAllocator) arena, nm, in, out, src, hdr, true,
                                0);
            } finally {
                MlxErrors.check((int) n.vectorStringFree.invokeExact(in), "mlx_vector_string_free");
                MlxErrors.check((int) n.vectorStringFree.invokeExact(out), "mlx_vector_string_free");
            }
        } catch (Throwable t) {
            arena.close();
            throw MlxErrors.rethrow(t);
        }
        try {
            MlxErrors.checkHandle(handle, "mlx_fast_" + gpu.wireName() + "_kernel_new(" + name + ")");
        } catch (MlxException e) {
            arena.close();
            throw e;
        }
    }

    /**
     * A Metal kernel named {@code name} with body {@code source}, reading the named inputs and writing the named
     * outputs; inputs are made row-contiguous before the kernel reads them.
     *
     * @throws MlxException where MLX has no Metal back-end, with MLX's message
     */
    public static MlxCustomKernel create(Mlx mlx, String name, List<String> inputs, List<String> outputs,
            String source) {
        return create(mlx, Gpu.METAL, name, inputs, outputs, source, "");
    }

    /**
     * A kernel in {@code gpu}'s language named {@code name} with body {@code source} and {@code header} (helpers and
     * macros placed before the kernel), reading the named inputs and writing the named outputs; inputs are made
     * row-contiguous before the kernel reads them.
     *
     * @throws MlxException where MLX refuses the kernel, with MLX's message
     */
    public static MlxCustomKernel create(Mlx mlx, Gpu gpu, String name, List<String> inputs, List<String> outputs,
            String source, String header) {
        return new MlxCustomKernel(mlx, gpu, name, inputs, outputs, source, header);
    }

    /** Whether MLX runs on a Metal device here ({@code mlx_metal_is_available}). */
    public static boolean metalAvailable(Mlx mlx) {
        return available(mlx, Gpu.METAL);
    }

    /**
     * Whether MLX runs kernels in {@code gpu}'s language here: {@code mlx_metal_is_available} /
     * {@code mlx_cuda_is_available}. Where the library has no {@code mlx_cuda_is_available} (MLX-C before 0.5.0),
     * CUDA is taken to be present when MLX's default device is a GPU and Metal is not available.
     */
    public static boolean available(Mlx mlx, Gpu gpu) {
        MlxKernelNative k = mlx.kernels(gpu);
        if (k.isAvailable == null) {
            return gpu == Gpu.CUDA && mlx.device().startsWith("Device(gpu") && !metalAvailable(mlx);
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment res = a.allocate(ValueLayout.JAVA_BOOLEAN);
            MlxErrors.check((int) k.isAvailable.invokeExact(res), "mlx_" + gpu.wireName() + "_is_available");
            return res.get(ValueLayout.JAVA_BOOLEAN, 0);
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
    }

    /** The language of this kernel. */
    public Gpu gpu() {
        return n.gpu;
    }

    private MemorySegment strings(List<String> names) throws Throwable {
        MemorySegment ptrs = arena.allocate(ValueLayout.ADDRESS, names.size());
        for (int i = 0; i < names.size(); i++) {
            ptrs.setAtIndex(ValueLayout.ADDRESS, i, arena.allocateFrom(names.get(i)));
        }
        MemorySegment vec = (MemorySegment) n.vectorStringNewData.invokeExact((SegmentAllocator) arena, ptrs,
                (long) names.size());
        MlxErrors.checkHandle(vec, "mlx_vector_string_new_data");
        return vec;
    }

    /**
     * The kernel over {@code grid} threads (x, y, z; MLX dispatches exactly that many, in groups of at most
     * {@code group}) on the scope's stream: one array per output, owned by the scope.
     */
    public MlxArray[] apply(MlxScope s, List<MlxArray> inputs, List<Output> outputs, int[] grid, int[] group,
            List<TemplateArg> args) {
        if (closed) {
            throw new IllegalStateException("custom kernel is closed");
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment cfg = (MemorySegment) n.configNew.invokeExact((SegmentAllocator) a);
            MlxErrors.checkHandle(cfg, "mlx_fast_kernel_config_new");
            try {
                for (Output o : outputs) {
                    MlxErrors.check((int) n.configAddOutput.invokeExact(cfg, a.allocateFrom(ValueLayout.JAVA_INT,
                            o.shape()), (long) o.shape().length, o.dtype().c()),
                            "mlx_fast_kernel_config_add_output_arg");
                }
                MlxErrors.check((int) n.configSetGrid.invokeExact(cfg, grid[0], grid[1], grid[2]),
                        "mlx_fast_kernel_config_set_grid");
                MlxErrors.check((int) n.configSetThreadGroup.invokeExact(cfg, group[0], group[1], group[2]),
                        "mlx_fast_kernel_config_set_thread_group");
                for (TemplateArg t : args) {
                    MemorySegment name = a.allocateFrom(t.name());
                    int st = t.bool() ? (int) n.configAddTemplateBool.invokeExact(cfg, name, t.value() != 0)
                            : (int) n.configAddTemplateInt.invokeExact(cfg, name, t.value());
                    MlxErrors.check(st, "mlx_fast_kernel_config_add_template_arg");
                }
                return run(s, a, cfg, inputs, outputs.size());
            } finally {
                n.configFree.invokeExact(cfg);
            }
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
    }

    private MlxArray[] run(MlxScope s, Arena a, MemorySegment cfg, List<MlxArray> inputs, int outputs)
            throws Throwable {
        MemorySegment in = s.vector(inputs.toArray(MlxArray[]::new));
        MemorySegment out = (MemorySegment) mlx.n.vectorArrayNew.invokeExact((SegmentAllocator) a);
        try {
            // out passed as mlx_vector_array*: the call sets it
            MlxErrors.check((int) n.kernelApply.invokeExact(out, handle, in, cfg, s.stream()),
                    "mlx_fast_" + n.gpu.wireName() + "_kernel_apply");
            MlxArray[] result = new MlxArray[outputs];
            for (int i = 0; i < outputs; i++) {
                result[i] = s.newArray();
                MlxErrors.check((int) mlx.n.vectorArrayGet.invokeExact(result[i].struct(), out, (long) i),
                        "mlx_vector_array_get");
            }
            return result;
        } finally {
            s.freeVector(in);
            s.freeVector(out);
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            n.kernelFree.invokeExact(handle);
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        } finally {
            arena.close();
        }
    }
}
