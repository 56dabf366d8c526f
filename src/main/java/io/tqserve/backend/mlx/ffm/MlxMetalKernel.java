package io.tqserve.backend.mlx.ffm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * A kernel in the Metal Shading Language run through MLX's custom-kernel API ({@code mlx_fast_metal_kernel_*}):
 * the source is the kernel's body; MLX writes its signature from the input and output names, the inputs' dtypes
 * ({@code const device T* name}), the {@code name_shape} arrays the body mentions and the Metal attributes it uses
 * ({@code thread_position_in_grid}, {@code threads_per_grid}, ...), compiles one instantiation per set of template
 * arguments, and adds the kernel to the graph like any other operation. Metal only: on a build without it,
 * creation fails with MLX's message ("No Metal back-end"), and on a Metal build applying it to a CPU stream fails.
 */
public final class MlxMetalKernel implements AutoCloseable {
    private final Mlx mlx;
    private final MlxMetalNative n;
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

    private MlxMetalKernel(Mlx mlx, String name, List<String> inputs, List<String> outputs, String source) {
        this.mlx = mlx;
        this.n = mlx.metal();
        try {
            MemorySegment in = strings(inputs);
            MemorySegment out = strings(outputs);
            try {
                handle = (MemorySegment) n.kernelNew.invokeExact((SegmentAllocator) arena, arena.allocateFrom(name), in,
                        out, arena.allocateFrom(source), arena.allocateFrom(""), true, false);
            } finally {
                MlxErrors.check((int) n.vectorStringFree.invokeExact(in), "mlx_vector_string_free");
                MlxErrors.check((int) n.vectorStringFree.invokeExact(out), "mlx_vector_string_free");
            }
        } catch (Throwable t) {
            arena.close();
            throw MlxErrors.rethrow(t);
        }
        try {
            MlxErrors.checkHandle(handle, "mlx_fast_metal_kernel_new(" + name + ")");
        } catch (MlxException e) {
            arena.close();
            throw e;
        }
    }

    /**
     * A kernel named {@code name} with body {@code source}, reading the named inputs and writing the named outputs;
     * inputs are made row-contiguous before the kernel reads them.
     *
     * @throws MlxException where MLX has no Metal back-end, with MLX's message
     */
    public static MlxMetalKernel create(Mlx mlx, String name, List<String> inputs, List<String> outputs,
            String source) {
        return new MlxMetalKernel(mlx, name, inputs, outputs, source);
    }

    /** Whether MLX runs on a Metal device here ({@code mlx_metal_is_available}). */
    public static boolean metalAvailable(Mlx mlx) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment res = a.allocate(ValueLayout.JAVA_BOOLEAN);
            MlxErrors.check((int) mlx.metal().isAvailable.invokeExact(res), "mlx_metal_is_available");
            return res.get(ValueLayout.JAVA_BOOLEAN, 0);
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
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
            throw new IllegalStateException("Metal kernel is closed");
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment cfg = (MemorySegment) n.configNew.invokeExact((SegmentAllocator) a);
            MlxErrors.checkHandle(cfg, "mlx_fast_metal_kernel_config_new");
            try {
                for (Output o : outputs) {
                    MlxErrors.check((int) n.configAddOutput.invokeExact(cfg, a.allocateFrom(ValueLayout.JAVA_INT,
                            o.shape()), (long) o.shape().length, o.dtype().c()), "mlx_fast_metal_kernel_config_add_output_arg");
                }
                MlxErrors.check((int) n.configSetGrid.invokeExact(cfg, grid[0], grid[1], grid[2]),
                        "mlx_fast_metal_kernel_config_set_grid");
                MlxErrors.check((int) n.configSetThreadGroup.invokeExact(cfg, group[0], group[1], group[2]),
                        "mlx_fast_metal_kernel_config_set_thread_group");
                for (TemplateArg t : args) {
                    MemorySegment name = a.allocateFrom(t.name());
                    int st = t.bool() ? (int) n.configAddTemplateBool.invokeExact(cfg, name, t.value() != 0)
                            : (int) n.configAddTemplateInt.invokeExact(cfg, name, t.value());
                    MlxErrors.check(st, "mlx_fast_metal_kernel_config_add_template_arg");
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
                    "mlx_fast_metal_kernel_apply");
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
