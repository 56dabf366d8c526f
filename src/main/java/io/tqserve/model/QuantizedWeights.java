package io.tqserve.model;

import io.tqserve.backend.DType;
import io.tqserve.backend.GroupQuant;
import io.tqserve.backend.Matrix;

/**
 * Reads the weight matrices of a model that may be quantized the MLX way: a quantized module {@code P} is stored as
 * {@code P.weight} (uint32, shape {@code [rows, cols·bits/32]}: the packed codes), {@code P.scales} and
 * {@code P.biases} (shape {@code [rows, cols/group_size]}, in the model's float dtype); a dense module as
 * {@code P.weight} alone. Which modules are quantized, and how, follows the config's quantization block
 * ({@link QuantizationConfig}), as mlx-lm decides it.
 */
final class QuantizedWeights {
    private final Safetensors st;
    private final QuantizationConfig config;

    QuantizedWeights(Safetensors st, QuantizationConfig config) {
        this.st = st;
        this.config = config;
    }

    /** The matrix {@code name} (a module's ".weight"), dense or quantized, checked against (rows, cols). */
    Matrix matrix(String name, int rows, int cols) {
        String module = name.endsWith(".weight") ? name.substring(0, name.length() - ".weight".length()) : name;
        QuantizationConfig.Params p = config.forModule(module, st.has(module + ".scales"));
        if (p == null) {
            Safetensors.Tensor t = st.get(name);
            if (t.dtype() == DType.U32) {
                throw new IllegalArgumentException("tensor " + name + " holds packed quantized codes (U32), but "
                        + (config.quantized() ? "the config's quantization block leaves module " + module + " dense"
                        : "config.json has no quantization block"));
            }
            return ModelWeights.dense(st, name, rows, cols);
        }
        Safetensors.Tensor w = st.get(name);
        Safetensors.Tensor scales = st.get(module + ".scales");
        Safetensors.Tensor biases = st.get(module + ".biases");
        if (w.dtype() != DType.U32) {
            throw new IllegalArgumentException("tensor " + name + " of quantized module " + module + " is "
                    + w.dtype() + ", expected U32 packed codes");
        }
        if ((long) cols * p.bits() % 32 != 0 || cols % p.groupSize() != 0) {
            throw new IllegalArgumentException(module + ": " + cols + " input columns do not pack into "
                    + p.bits() + "-bit codes in groups of " + p.groupSize());
        }
        ModelWeights.checkShape(w, rows, (long) cols * p.bits() / 32);
        ModelWeights.checkShape(scales, rows, cols / p.groupSize());
        ModelWeights.checkShape(biases, rows, cols / p.groupSize());
        if (scales.dtype() != biases.dtype() || scales.dtype() == DType.U32) {
            throw new IllegalArgumentException(module + ": scales (" + scales.dtype() + ") and biases ("
                    + biases.dtype() + ") must share one float dtype");
        }
        GroupQuant q = new GroupQuant(p.bits(), p.groupSize(), scales.data(), biases.data(), scales.dtype());
        return new Matrix(w.data(), DType.U32, rows, cols, q);
    }
}
