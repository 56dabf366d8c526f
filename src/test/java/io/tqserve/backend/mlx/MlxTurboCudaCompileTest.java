package io.tqserve.backend.mlx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.mlx.ffm.MlxCustomKernel.Gpu;
import io.tqserve.backend.mlx.ffm.MlxCustomKernel.TemplateArg;
import io.tqserve.kv.turbo.KeyQuant;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CUDA sources of {@link MlxTurboKernels} compile with nvcc for an H100/H200 ({@code -arch=sm_90}), each wrapped
 * exactly as MLX's {@code cuda_kernel} wraps a custom kernel ({@link CudaWrapper}: MLX's default header with its
 * includes, the kernel's header, {@code __global__} inside {@code namespace mlx::core::cu}, one {@code const T*}
 * per input, {@code __grid_constant__ Shape} parameters, {@code constexpr} template arguments), with a stand-in for
 * MLX's {@code utils.cuh} that declares only {@code Shape} and {@code Strides}. Every instantiation a device cache can
 * ask for is compiled: the five key quantizers × value bits 2, 3, 4, 5, 8 × head_dim 64 and 128 for
 * {@code tq_decode}, head_dim 64 and 128 for {@code tq_reduce}, in one translation unit (distinct names, as MLX's
 * template-argument hash makes them). Any error or warning fails the test. Skipped, saying so, where no nvcc exists.
 */
class MlxTurboCudaCompileTest {
    @TempDir
    Path work;

    static boolean nvccAvailable() {
        try {
            Process p = new ProcessBuilder("nvcc", "--version").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    @Test
    void everyCudaInstantiationCompilesWithNvcc() throws Exception {
        Assumptions.assumeTrue(nvccAvailable(), "no nvcc on this machine: the CUDA kernels' compile check needs it");
        Path include = Files.createDirectories(work.resolve("include/mlx/backend/cuda/device"));
        try (InputStream in = getClass().getResourceAsStream("/kernel-emulation/mlx/backend/cuda/device/utils.cuh")) {
            Files.write(include.resolve("utils.cuh"), in.readAllBytes());
        }
        String includes = "#include \"mlx/backend/cuda/device/utils.cuh\"\n\n#include <cooperative_groups.h>\n";
        String header = MlxTurboKernelSource.header(Gpu.CUDA);
        StringBuilder unit = new StringBuilder();
        int kernels = 0;
        for (int d : new int[] {64, 128}) {
            for (KeyQuant k : KeyQuant.values()) {
                for (int vBits : new int[] {2, 3, 4, 5, 8}) {
                    List<TemplateArg> args = MlxTurboKernels.decodeArgs(d, k.bits(), k.signed(), vBits,
                            MlxTurboKernels.BLOCK);
                    unit.append(CudaWrapper.wrap(includes, header, "custom_kernel_tq_decode" + hash(args),
                            MlxTurboKernelSource.DECODE_INPUTS,
                            List.of("float", "int32_t", "uint8_t", "__half", "__half", "uint8_t", "__half", "float"),
                            MlxTurboKernelSource.DECODE_OUTPUTS, List.of("float"), args,
                            MlxTurboKernelSource.source(Gpu.CUDA, MlxTurboKernelSource.DECODE_BODY)));
                    kernels++;
                }
            }
            List<TemplateArg> args = List.of(TemplateArg.of("D", d));
            unit.append(CudaWrapper.wrap(includes, header, "custom_kernel_tq_reduce" + hash(args),
                    MlxTurboKernelSource.REDUCE_INPUTS, List.of("float"), MlxTurboKernelSource.REDUCE_OUTPUTS,
                    List.of("float", "float"), args,
                    MlxTurboKernelSource.source(Gpu.CUDA, MlxTurboKernelSource.REDUCE_BODY)));
            kernels++;
        }
        assertEquals(52, kernels);
        // MLX compiles each kernel as its own module; here they share one unit, so the header's guard applies
        Files.writeString(work.resolve("tq_kernels.cu"), unit);
        List<String> cmd = new ArrayList<>(List.of("nvcc", "-arch=sm_90", "-std=c++17", "-Werror", "all-warnings",
                "-I", work.resolve("include").toString(), "-c", "tq_kernels.cu", "-o", "tq_kernels.o"));
        Process p = new ProcessBuilder(cmd).directory(work.toFile()).redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(600, TimeUnit.SECONDS), "nvcc did not finish in 600 s");
        assertEquals(0, p.exitValue(), String.join(" ", cmd) + ":\n" + text);
        assertTrue(Files.size(work.resolve("tq_kernels.o")) > 0);
    }

    /** MLX's {@code template_arguments_hash}: "_" and each value, bools as t/f. */
    private static String hash(List<TemplateArg> args) {
        StringBuilder h = new StringBuilder();
        for (TemplateArg a : args) {
            h.append('_').append(a.bool() ? (a.value() != 0 ? "t" : "f") : String.valueOf(a.value()));
        }
        return h.toString();
    }
}
