package io.tqserve.backend.mlx;

import io.tqserve.backend.mlx.ffm.MlxCustomKernel.TemplateArg;
import java.util.List;

/**
 * The CUDA source MLX's {@code cuda_kernel} compiles for a custom kernel (its {@code build_kernel} in
 * mlx/backend/cuda/custom_kernel.cpp, MLX 0.31): the default header, the kernel's header, then
 * {@code __global__ void name(...)} inside {@code namespace mlx::core::cu} with one {@code const T*} per input, a
 * {@code const __grid_constant__ Shape name_shape} where the body mentions it, the outputs, the template arguments
 * as {@code constexpr}s, and the body. {@code includes} stands for the includes of MLX's default header (the
 * emulator's shim, or the real CUDA headers for nvcc).
 */
final class CudaWrapper {
    private CudaWrapper() {
    }

    static String wrap(String includes, String header, String function, List<String> inputNames,
            List<String> inputTypes, List<String> outputNames, List<String> outputTypes, List<TemplateArg> args,
            String source) {
        StringBuilder c = new StringBuilder("\n").append(includes)
                .append("\n#define inf cuda::std::numeric_limits<float>::infinity()\n\n");
        c.append(header);
        c.append("namespace mlx::core::cu {\n\nnamespace cg = cooperative_groups;\n\n");
        c.append("__global__ void ").append(function).append("(\n");
        for (int i = 0; i < inputNames.size(); i++) {
            String n = inputNames.get(i);
            c.append("    const ").append(inputTypes.get(i)).append("* ").append(n).append(",\n");
            if (source.contains(n + "_shape")) {
                c.append("    const __grid_constant__ Shape ").append(n).append("_shape,\n");
            }
        }
        for (int i = 0; i < outputNames.size(); i++) {
            c.append("    ").append(outputTypes.get(i)).append("* ").append(outputNames.get(i))
                    .append(i < outputNames.size() - 1 ? ",\n" : ") {\n");
        }
        if (!args.isEmpty()) {
            for (TemplateArg a : args) {
                if (a.bool()) {
                    c.append("  constexpr bool ").append(a.name()).append(" = ").append(a.value() != 0 ? "true"
                            : "false").append(";\n");
                } else {
                    c.append("  constexpr int ").append(a.name()).append(" = ").append(a.value()).append(";\n");
                }
            }
            c.append("\n");
        }
        c.append(source).append("\n}\n\n} // namespace mlx::core::cu\n");
        return c.toString();
    }
}
