package io.tqserve.backend.mlx;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs the body of a kernel written for MLX's custom Metal kernels ({@code mlx_fast_metal_kernel}) on the CPU: it
 * writes the signature MLX would write (MLX's {@code write_signature} in mlx/backend/metal/custom_kernel.cpp: one
 * pointer per input, {@code name_shape} only where the body mentions it, the outputs, then the Metal attributes the
 * body mentions, in MLX's order), puts the body inside, compiles that as C++ against {@code metal_shim.h} with the
 * machine's g++, and runs every thread of the grid in turn. It checks what the kernel computes (indexing, bit
 * unpacking, arithmetic) where no Metal device exists; whether Metal's compiler accepts the source is checked only
 * on a Mac ({@code MlxTurboMetalParityTest}).
 */
final class MetalEmulator {
    /** The attributes MLX recognises in a body, in the order it declares them (type, name). */
    private static final String[][] ATTRIBUTES = {
        {"uint3", "thread_position_in_grid"}, {"uint3", "threads_per_grid"}};

    /** An input: its name, element type as MLX spells it, shape and little-endian bytes. */
    record Input(String name, String type, int[] shape, byte[] data) {
        long elements() {
            long n = 1;
            for (int d : shape) {
                n *= d;
            }
            return n;
        }
    }

    /** An output: its name, element type and element size in bytes, element count. */
    record Output(String name, String type, int elementBytes, int elements) {
    }

    private MetalEmulator() {
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

    /**
     * Compiles kernel {@code name} (body {@code source}, template arguments {@code template} as
     * {@code "int D", "128"} pairs) in {@code work} and runs it over {@code grid}: the outputs' bytes, in order.
     */
    static List<byte[]> run(Path work, String name, String source, List<String[]> template, List<Input> inputs,
            List<Output> outputs, int[] grid) throws IOException, InterruptedException {
        StringBuilder c = new StringBuilder();
        c.append("#include \"metal_shim.h\"\n");
        if (!template.isEmpty()) {
            c.append("template <");
            for (int i = 0; i < template.size(); i++) {
                c.append(i > 0 ? ", " : "").append(template.get(i)[0]);
            }
            c.append(">\n");
        }
        c.append("[[kernel]] void custom_kernel_").append(name).append("(\n");
        List<String> params = new ArrayList<>();
        List<String> args = new ArrayList<>();
        int buffer = 0;
        for (int i = 0; i < inputs.size(); i++) {
            Input in = inputs.get(i);
            String space = in.elements() < 8 ? "constant" : "device";
            params.add("  const " + space + " " + in.type() + "* " + in.name() + " [[buffer(" + buffer++ + ")]]");
            args.add("(const " + in.type() + "*) in" + i + ".data()");
            if (source.contains(in.name() + "_shape")) {
                params.add("  const constant int* " + in.name() + "_shape [[buffer(" + buffer++ + ")]]");
                args.add("shape" + i);
            }
        }
        for (int i = 0; i < outputs.size(); i++) {
            Output o = outputs.get(i);
            params.add("  device " + o.type() + "* " + o.name() + " [[buffer(" + buffer++ + ")]]");
            args.add("(" + o.type() + "*) out" + i + ".data()");
        }
        for (String[] attr : ATTRIBUTES) {
            if (source.contains(attr[1])) {
                params.add("  " + attr[0] + " " + attr[1] + " [[" + attr[1] + "]]");
                args.add(attr[1].equals("threads_per_grid") ? "grid" : "pos");
            }
        }
        c.append(String.join(",\n", params)).append(") {\n").append(source).append("\n}\n\n");
        c.append("static std::vector<unsigned char> slurp(const char* f, size_t n) {\n")
                .append("    std::vector<unsigned char> v(n + 16);\n")
                .append("    FILE* h = std::fopen(f, \"rb\");\n")
                .append("    if (!h || std::fread(v.data(), 1, n, h) != n) std::exit(2);\n")
                .append("    std::fclose(h);\n    return v;\n}\n\n");
        c.append("int main() {\n");
        for (int i = 0; i < inputs.size(); i++) {
            Input in = inputs.get(i);
            Files.write(work.resolve("in" + i + ".bin"), in.data());
            c.append("    auto in").append(i).append(" = slurp(\"in").append(i).append(".bin\", ")
                    .append(in.data().length).append(");\n");
            if (source.contains(in.name() + "_shape")) {
                c.append("    int shape").append(i).append("[] = {");
                for (int d = 0; d < in.shape().length; d++) {
                    c.append(d > 0 ? ", " : "").append(in.shape()[d]);
                }
                c.append("};\n");
            }
        }
        for (int i = 0; i < outputs.size(); i++) {
            Output o = outputs.get(i);
            c.append("    std::vector<unsigned char> out").append(i).append("((size_t) ")
                    .append((long) o.elements() * o.elementBytes()).append(");\n");
        }
        c.append("    uint3 grid = {").append(grid[0]).append(", ").append(grid[1]).append(", ").append(grid[2])
                .append("};\n");
        c.append("    for (uint z = 0; z < grid.z; z++)\n    for (uint y = 0; y < grid.y; y++)\n")
                .append("    for (uint x = 0; x < grid.x; x++) {\n        uint3 pos = {x, y, z};\n")
                .append("        custom_kernel_").append(name);
        if (!template.isEmpty()) {
            c.append("<");
            for (int i = 0; i < template.size(); i++) {
                c.append(i > 0 ? ", " : "").append(template.get(i)[1]);
            }
            c.append(">");
        }
        c.append("(").append(String.join(", ", args)).append(");\n    }\n");
        for (int i = 0; i < outputs.size(); i++) {
            c.append("    { FILE* h = std::fopen(\"out").append(i).append(".bin\", \"wb\"); std::fwrite(out").append(i)
                    .append(".data(), 1, out").append(i).append(".size(), h); std::fclose(h); }\n");
        }
        c.append("    return 0;\n}\n");
        Files.writeString(work.resolve("kernel.cpp"), c);
        try (InputStream shim = MetalEmulator.class.getResourceAsStream("/metal-emulation/metal_shim.h")) {
            Files.write(work.resolve("metal_shim.h"), shim.readAllBytes());
        }
        exec(work, "g++", "-std=c++20", "-O1", "-Wall", "-Wno-attributes", "-Werror", "-o", "kernel", "kernel.cpp");
        exec(work, work.resolve("kernel").toString());
        List<byte[]> out = new ArrayList<>();
        for (int i = 0; i < outputs.size(); i++) {
            out.add(Files.readAllBytes(work.resolve("out" + i + ".bin")));
        }
        return out;
    }

    private static void exec(Path dir, String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException(command[0] + " did not finish in 120 s");
        }
        if (p.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " exited " + p.exitValue() + ":\n" + text);
        }
    }
}
