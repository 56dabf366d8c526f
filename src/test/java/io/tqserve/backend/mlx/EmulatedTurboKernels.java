package io.tqserve.backend.mlx;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxCustomKernel.Gpu;
import io.tqserve.backend.mlx.ffm.MlxCustomKernel.Output;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * An {@link MlxBackend} whose TurboQuant decode kernels ({@link MlxTurboKernels}) run in {@link KernelEmulator}
 * instead of on a GPU: each application evaluates the kernel's inputs on MLX's device, runs the Metal or CUDA source
 * generated from {@link MlxTurboKernelSource} on the CPU, and hands the outputs back as MLX arrays, so a decode on
 * MLX's CPU device goes through the kernel path (grid sizes, inputs and the ops around the kernels included) with
 * the GPU language's code doing the attention.
 */
public final class EmulatedTurboKernels {
    private EmulatedTurboKernels() {
    }

    /** A backend on {@code mlx} whose decode steps run the {@code gpu} kernels emulated in {@code work}. */
    public static MlxBackend backend(Mlx mlx, CpuBackend cpu, MlxOptions options, Gpu gpu, Path work) {
        KernelEmulator decode = new KernelEmulator(work, gpu, "tq_decode", MlxTurboKernelSource.DECODE_INPUTS,
                MlxTurboKernelSource.DECODE_OUTPUTS, MlxTurboKernelSource.source(gpu, MlxTurboKernelSource.DECODE_BODY),
                MlxTurboKernelSource.header(gpu));
        KernelEmulator reduce = new KernelEmulator(work, gpu, "tq_reduce", MlxTurboKernelSource.REDUCE_INPUTS,
                MlxTurboKernelSource.REDUCE_OUTPUTS, MlxTurboKernelSource.source(gpu, MlxTurboKernelSource.REDUCE_BODY),
                MlxTurboKernelSource.header(gpu));
        MlxTurboKernels kernels = new MlxTurboKernels(gpu, launcher(decode), launcher(reduce), () -> { });
        return new MlxBackend(mlx, cpu, options, kernels);
    }

    /** The path a backend's decode steps take: ops, metal or cuda. */
    public static String path(MlxBackend backend) {
        return backend.turboKernelPath();
    }

    private static MlxTurboKernels.Launcher launcher(KernelEmulator emulator) {
        return (s, inputs, outputs, grid, group, args) -> {
            List<KernelEmulator.Input> in = new ArrayList<>();
            for (MlxArray a : inputs) {
                byte[] bytes = s.toBytes(s.view(s.contiguous(a), MlxDtype.UINT8));
                in.add(new KernelEmulator.Input(a.dtype(), a.shape(), bytes));
            }
            List<KernelEmulator.Output> out = new ArrayList<>();
            for (Output o : outputs) {
                long n = 1;
                for (int d : o.shape()) {
                    n *= d;
                }
                out.add(new KernelEmulator.Output(o.dtype(), n));
            }
            List<byte[]> results = emulator.run(in, out, grid, group, args);
            MlxArray[] arrays = new MlxArray[outputs.size()];
            for (int i = 0; i < arrays.length; i++) {
                try (Arena arena = Arena.ofConfined()) { // MLX copies the data
                    MemorySegment data = arena.allocate(results.get(i).length, 16);
                    MemorySegment.copy(MemorySegment.ofArray(results.get(i)), 0, data, 0, results.get(i).length);
                    arrays[i] = s.fromSegment(data, outputs.get(i).dtype(), outputs.get(i).shape());
                }
            }
            return arrays;
        };
    }
}
