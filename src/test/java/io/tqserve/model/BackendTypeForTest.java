package io.tqserve.model;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code auto} serves a quantized model on the CPU backend (the MLX backend does not run quantized weights yet). */
class BackendTypeForTest {

    @Test
    void autoBecomesCpuForAQuantizedModelOnly(@TempDir Path dir) throws Exception {
        Path quantized = Files.createDirectories(dir.resolve("q"));
        Files.writeString(quantized.resolve("config.json"),
                "{\"architectures\":[\"LlamaForCausalLM\"],\"quantization\":{\"group_size\":64,\"bits\":4}}");
        Path dense = Files.createDirectories(dir.resolve("d"));
        Files.writeString(dense.resolve("config.json"), "{\"architectures\":[\"LlamaForCausalLM\"]}");

        assertEquals("cpu", Model.backendTypeFor("auto", quantized));
        assertEquals("cpu", Model.backendTypeFor("AUTO", quantized));
        assertEquals("mlx", Model.backendTypeFor("mlx", quantized));
        assertEquals("auto", Model.backendTypeFor("auto", dense));
        assertEquals("auto", Model.backendTypeFor("auto", dir.resolve("missing")));
    }
}
