package io.tqserve.backend.mlx;

import io.tqserve.backend.mlx.ffm.MlxCustomKernel.Gpu;
import io.tqserve.backend.mlx.ffm.MlxCustomKernel.TemplateArg;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs a kernel written for MLX's custom kernels ({@code mlx_fast_metal_kernel} or {@code mlx_fast_cuda_kernel}) on
 * the CPU: it writes the source MLX would compile around the body and header (Metal: MLX's {@code write_signature}
 * in mlx/backend/metal/custom_kernel.cpp, template parameters, one pointer per input, {@code name_shape} only where
 * the body mentions it, the outputs, the attributes the body mentions; CUDA: MLX's {@code build_kernel} in
 * mlx/backend/cuda/custom_kernel.cpp, the same parameters with {@code Shape} by value, template arguments as
 * {@code constexpr}s, inside {@code namespace mlx::core::cu}), compiles it as C++ against {@code metal_shim.h} or
 * {@code cuda_shim.h} with the machine's g++ once per set of template arguments, and runs the grid as MLX
 * dispatches it: Metal's exact grid in threadgroups, CUDA's ⌈grid/block⌉ blocks of min(block, grid) threads. The
 * threads of a group run at once as OS threads so that SIMD reductions meet ({@code emu_group.h}). It checks what a
 * kernel computes (indexing, bit unpacking, reductions, arithmetic) where no GPU exists; whether Metal's compiler
 * accepts the source is checked only on a Mac, CUDA's by {@code MlxTurboCudaCompileTest} with nvcc.
 */
final class KernelEmulator {
    /** The Metal attributes MLX recognises in a body, in the order it declares them (type, name). */
    private static final String[][] ATTRIBUTES = {
        {"uint3", "thread_position_in_grid"}, {"uint3", "threads_per_grid"}};

    /** An input: its name, dtype, shape and little-endian bytes. */
    record Input(MlxDtype dtype, int[] shape, byte[] data) {
        long elements() {
            long n = 1;
            for (int d : shape) {
                n *= d;
            }
            return n;
        }
    }

    /** An output: dtype and element count. */
    record Output(MlxDtype dtype, long elements) {
    }

    private final Path work;
    private final Gpu gpu;
    private final String name;
    private final List<String> inputNames;
    private final List<String> outputNames;
    private final String source;
    private final String header;
    private final Map<String, Path> binaries = new HashMap<>();
    private int runs;

    KernelEmulator(Path work, Gpu gpu, String name, List<String> inputNames, List<String> outputNames, String source,
            String header) {
        this.work = work;
        this.gpu = gpu;
        this.name = name;
        this.inputNames = inputNames;
        this.outputNames = outputNames;
        this.source = source;
        this.header = header;
    }

    /** Whether g++ runs here. */
    static boolean available() {
        try {
            Process p = new ProcessBuilder("g++", "--version").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Metal's type name for a dtype, as MLX's {@code get_type_string}. */
    static String metalType(MlxDtype t) {
        return switch (t) {
            case FLOAT32 -> "float";
            case FLOAT16 -> "float16_t";
            case UINT8 -> "uint8_t";
            case INT32 -> "int32_t";
            default -> throw new IllegalArgumentException("no emulation of " + t);
        };
    }

    /** CUDA's type name for a dtype, as MLX's {@code dtype_to_cuda_type}. */
    static String cudaType(MlxDtype t) {
        return switch (t) {
            case FLOAT32 -> "float";
            case FLOAT16 -> "__half";
            case UINT8 -> "uint8_t";
            case INT32 -> "int32_t";
            default -> throw new IllegalArgumentException("no emulation of " + t);
        };
    }

    /**
     * The kernel over {@code grid} threads in groups of {@code group}, with template arguments {@code args}: the
     * outputs' bytes, in order.
     */
    List<byte[]> run(List<Input> inputs, List<Output> outputs, int[] grid, int[] group, List<TemplateArg> args) {
        try {
            Path binary = binary(inputs, outputs, args);
            Path dir = Files.createDirectories(work.resolve(name + "-" + gpu.wireName() + "-run" + runs++));
            StringBuilder manifest = new StringBuilder();
            for (int i = 0; i < 3; i++) {
                manifest.append(grid[i]).append(' ');
            }
            for (int i = 0; i < 3; i++) {
                manifest.append(group[i]).append(' ');
            }
            manifest.append('\n');
            for (int i = 0; i < inputs.size(); i++) {
                Input in = inputs.get(i);
                Files.write(dir.resolve("in" + i + ".bin"), in.data());
                manifest.append(in.data().length).append(' ').append(in.shape().length);
                for (int d : in.shape()) {
                    manifest.append(' ').append(d);
                }
                manifest.append('\n');
            }
            for (Output o : outputs) {
                manifest.append(o.elements() * o.dtype().bytes()).append('\n');
            }
            Files.writeString(dir.resolve("manifest.txt"), manifest);
            exec(dir, binary.toString());
            List<byte[]> out = new ArrayList<>();
            for (int i = 0; i < outputs.size(); i++) {
                out.add(Files.readAllBytes(dir.resolve("out" + i + ".bin")));
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private synchronized Path binary(List<Input> inputs, List<Output> outputs, List<TemplateArg> args) throws IOException {
        StringBuilder key = new StringBuilder();
        for (TemplateArg a : args) {
            key.append('_').append(a.bool() ? (a.value() != 0 ? "t" : "f") : String.valueOf(a.value()));
        }
        Path known = binaries.get(key.toString());
        if (known != null) {
            return known;
        }
        Path dir = Files.createDirectories(work.resolve(name + "-" + gpu.wireName() + key));
        for (String f : List.of("emu_group.h", "metal_shim.h", "cuda_shim.h")) {
            try (InputStream in = KernelEmulator.class.getResourceAsStream("/kernel-emulation/" + f)) {
                Files.write(dir.resolve(f), in.readAllBytes());
            }
        }
        String kernel = gpu == Gpu.METAL ? metalKernel(inputs, outputs, args) : cudaKernel(inputs, outputs, args);
        Files.writeString(dir.resolve("kernel.cpp"), kernel + main(inputs, outputs, args));
        exec(dir, "g++", "-std=c++20", "-O0", "-pthread", "-Wall", "-Wno-attributes",
                "-Werror", "-o", "kernel", "kernel.cpp");
        Path binary = dir.resolve("kernel");
        binaries.put(key.toString(), binary);
        return binary;
    }

    private String functionName(List<TemplateArg> args) {
        return "custom_kernel_" + name;
    }

    /** The source MLX's Metal back-end writes: header, template parameters, signature, body. */
    private String metalKernel(List<Input> inputs, List<Output> outputs, List<TemplateArg> args) {
        StringBuilder c = new StringBuilder("#include \"metal_shim.h\"\n");
        c.append(header);
        if (!args.isEmpty()) {
            c.append("template <");
            for (int i = 0; i < args.size(); i++) {
                c.append(i > 0 ? ", " : "").append(args.get(i).bool() ? "bool " : "int ").append(args.get(i).name());
            }
            c.append(">\n");
        }
        c.append("[[kernel]] void ").append(functionName(args)).append("(\n");
        List<String> params = new ArrayList<>();
        int buffer = 0;
        for (int i = 0; i < inputs.size(); i++) {
            Input in = inputs.get(i);
            String space = in.elements() < 8 ? "constant" : "device";
            params.add("  const " + space + " " + metalType(in.dtype()) + "* " + inputNames.get(i) + " [[buffer("
                    + buffer++ + ")]]");
            if (source.contains(inputNames.get(i) + "_shape")) {
                params.add("  const constant int* " + inputNames.get(i) + "_shape [[buffer(" + buffer++ + ")]]");
            }
        }
        for (int i = 0; i < outputs.size(); i++) {
            params.add("  device " + metalType(outputs.get(i).dtype()) + "* " + outputNames.get(i) + " [[buffer("
                    + buffer++ + ")]]");
        }
        for (String[] attr : ATTRIBUTES) {
            if (source.contains(attr[1])) {
                params.add("  " + attr[0] + " " + attr[1] + " [[" + attr[1] + "]]");
            }
        }
        return c.append(String.join(",\n", params)).append(") {\n").append(source).append("\n}\n\n").toString();
    }

    /** The source MLX's CUDA back-end writes (its default header with the shim in place of its includes). */
    private String cudaKernel(List<Input> inputs, List<Output> outputs, List<TemplateArg> args) {
        List<String> types = inputs.stream().map(in -> cudaType(in.dtype())).toList();
        List<String> outTypes = outputs.stream().map(o -> cudaType(o.dtype())).toList();
        return CudaWrapper.wrap("#include \"cuda_shim.h\"\n", header, functionName(args), inputNames, types,
                outputNames, outTypes, args, source);
    }

    /** main(): reads the manifest and inputs, runs every group, writes the outputs. */
    private String main(List<Input> inputs, List<Output> outputs, List<TemplateArg> args) {
        StringBuilder c = new StringBuilder();
        c.append("int main() {\n");
        c.append("    FILE* mf = std::fopen(\"manifest.txt\", \"r\");\n    if (!mf) return 4;\n");
        c.append("    unsigned g[3], t[3];\n");
        c.append("    if (std::fscanf(mf, \"%u %u %u %u %u %u\", &g[0], &g[1], &g[2], &t[0], &t[1], &t[2]) != 6)"
                + " return 5;\n");
        List<String> callArgs = new ArrayList<>();
        for (int i = 0; i < inputs.size(); i++) {
            String type = gpu == Gpu.METAL ? metalType(inputs.get(i).dtype()) : cudaType(inputs.get(i).dtype());
            c.append("    size_t n").append(i).append("; int nd").append(i).append(";\n");
            c.append("    if (std::fscanf(mf, \"%zu %d\", &n").append(i).append(", &nd").append(i)
                    .append(") != 2) return 6;\n");
            c.append("    int shp").append(i).append("[10] = {0};\n");
            c.append("    for (int d = 0; d < nd").append(i).append("; d++) if (std::fscanf(mf, \"%d\", &shp")
                    .append(i).append("[d]) != 1) return 7;\n");
            c.append("    auto in").append(i).append(" = tq_emu_slurp(\"in").append(i).append(".bin\", n").append(i)
                    .append(");\n");
            callArgs.add("(const " + type + "*) in" + i + ".data()");
            if (source.contains(inputNames.get(i) + "_shape")) {
                if (gpu == Gpu.METAL) {
                    callArgs.add("shp" + i);
                } else {
                    c.append("    mlx::core::cu::Shape shape").append(i).append("{};\n");
                    c.append("    for (int d = 0; d < 10; d++) shape").append(i).append("[d] = shp").append(i)
                            .append("[d];\n");
                    callArgs.add("shape" + i);
                }
            }
        }
        for (int i = 0; i < outputs.size(); i++) {
            String type = gpu == Gpu.METAL ? metalType(outputs.get(i).dtype()) : cudaType(outputs.get(i).dtype());
            c.append("    size_t m").append(i).append(";\n    if (std::fscanf(mf, \"%zu\", &m").append(i)
                    .append(") != 1) return 8;\n");
            c.append("    std::vector<unsigned char> out").append(i).append("(m").append(i).append(");\n");
            callArgs.add("(" + type + "*) out" + i + ".data()");
        }
        c.append("    std::fclose(mf);\n");
        StringBuilder call = new StringBuilder();
        if (gpu == Gpu.METAL) {
            call.append(functionName(args));
            if (!args.isEmpty()) {
                call.append('<');
                for (int i = 0; i < args.size(); i++) {
                    call.append(i > 0 ? ", " : "").append(args.get(i).bool() ? (args.get(i).value() != 0 ? "true"
                            : "false") : String.valueOf(args.get(i).value()));
                }
                call.append('>');
            }
            for (String[] attr : ATTRIBUTES) {
                if (source.contains(attr[1])) {
                    callArgs.add(attr[1].equals("threads_per_grid") ? "grid" : "pos");
                }
            }
            // Metal: exactly grid threads, in threadgroups of t (the last ones partial)
            c.append("    [[maybe_unused]] uint3 grid = {g[0], g[1], g[2]};\n");
            c.append("    for (unsigned bz = 0; bz < (g[2] + t[2] - 1) / t[2]; bz++)\n")
                    .append("    for (unsigned by = 0; by < (g[1] + t[1] - 1) / t[1]; by++)\n")
                    .append("    for (unsigned bx = 0; bx < (g[0] + t[0] - 1) / t[0]; bx++) {\n")
                    .append("        unsigned ex = std::min(t[0], g[0] - bx * t[0]);\n")
                    .append("        unsigned ey = std::min(t[1], g[1] - by * t[1]);\n")
                    .append("        unsigned ez = std::min(t[2], g[2] - bz * t[2]);\n")
                    .append("        tq_emu_run_group(ex * ey * ez, [&](unsigned i) {\n")
                    .append("            uint3 pos = {bx * t[0] + i % ex, by * t[1] + (i / ex) % ey,"
                            + " bz * t[2] + i / (ex * ey)};\n")
                    .append("            ").append(call).append("(").append(String.join(", ", callArgs))
                    .append(");\n        });\n    }\n");
        } else {
            call.append("mlx::core::cu::").append(functionName(args));
            // CUDA as MLX launches: block = min(t, g), ceil(g / t) blocks, every thread of every block runs
            c.append("    unsigned b[3] = {std::min(t[0], g[0]), std::min(t[1], g[1]), std::min(t[2], g[2])};\n");
            c.append("    unsigned nb[3] = {(g[0] + t[0] - 1) / t[0], (g[1] + t[1] - 1) / t[1],"
                    + " (g[2] + t[2] - 1) / t[2]};\n");
            c.append("    for (unsigned bz = 0; bz < nb[2]; bz++)\n    for (unsigned by = 0; by < nb[1]; by++)\n")
                    .append("    for (unsigned bx = 0; bx < nb[0]; bx++) {\n")
                    .append("        tq_emu_run_group(b[0] * b[1] * b[2], [&](unsigned i) {\n")
                    .append("            blockIdx = {bx, by, bz};\n")
                    .append("            blockDim = {b[0], b[1], b[2]};\n")
                    .append("            gridDim = {nb[0], nb[1], nb[2]};\n")
                    .append("            threadIdx = {i % b[0], (i / b[0]) % b[1], i / (b[0] * b[1])};\n")
                    .append("            ").append(call).append("(").append(String.join(", ", callArgs))
                    .append(");\n        });\n    }\n");
        }
        for (int i = 0; i < outputs.size(); i++) {
            c.append("    tq_emu_spill(\"out").append(i).append(".bin\", out").append(i).append(");\n");
        }
        return c.append("    return 0;\n}\n").toString();
    }

    private static void exec(Path dir, String... command) throws IOException {
        Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            if (!p.waitFor(300, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException(command[0] + " did not finish in 300 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            p.destroyForcibly();
            throw new IOException("interrupted", e);
        }
        if (p.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " exited " + p.exitValue() + ":\n" + text);
        }
    }
}
