package io.tqserve.model;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What a model folder's weights cost before they are loaded: the bytes of its safetensors files (memory-mapped
 * whole: packed codes, scales and biases of quantized modules included) and their format, from config.json.
 *
 * @param bytes     bytes of the weight files
 * @param bits      bits per quantized weight, or the dense dtype's width (16 for bf16/f16, 32 for f32)
 * @param groupSize the quantization group size, 0 when dense
 * @param format    e.g. "affine 4-bit, group size 64" or "bfloat16"
 */
public record WeightsInfo(long bytes, int bits, int groupSize, String format) {

    public static WeightsInfo read(Path dir) throws IOException {
        QuantizationConfig q = QuantizationConfig.load(dir);
        ModelConfig c = ModelConfig.load(dir);
        long bytes = 0;
        try (var files = Files.list(dir)) {
            for (Path f : files.toList()) {
                if (f.getFileName().toString().endsWith(".safetensors")) {
                    bytes += Files.size(f);
                }
            }
        }
        if (q.quantized()) {
            return new WeightsInfo(bytes, q.defaults().bits(), q.defaults().groupSize(), q.describe());
        }
        return new WeightsInfo(bytes, c.dtype().equals("float32") ? 32 : 16, 0, c.dtype());
    }
}
