package io.tqserve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.mlx.MlxTestLibrary;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

/** {@code tqserve generate --backend mlx}: the MLX device forward prints the reference greedy text. */
@Tag("mlx")
class GenerateCommandMlxTest {

    @Test
    void greedyGenerationOnMlxPrintsExactlyTheReferenceText() throws Exception {
        Path lib = MlxTestLibrary.open().libraryFile();
        String expected = JsonMapper.shared()
                .readTree(Files.readString(Path.of("models/tiny-llama-h128/reference_outputs.json")))
                .path("prompts").get(0).path("greedy_32_text").asString();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = GenerateCommand.run(new String[] {"generate", "--backend", "mlx", "--mlx-library", lib.toString(),
                "--prompt", "The quick brown fox", "--max-tokens", "32", "--temperature", "0"},
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        String diagnostics = err.toString(StandardCharsets.UTF_8);
        assertEquals(0, code, diagnostics);
        assertEquals(expected, out.toString(StandardCharsets.UTF_8));
        assertTrue(diagnostics.contains("backend mlx -> mlx: MLX "), diagnostics);
        assertTrue(diagnostics.contains("MLX decoder on Device("), diagnostics);
        assertTrue(diagnostics.contains("decode 32 tokens"), diagnostics);
    }
}
