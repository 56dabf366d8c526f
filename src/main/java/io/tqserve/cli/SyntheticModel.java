package io.tqserve.cli;

import io.tqserve.model.SafetensorsWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The ~0.58B random bf16 Llama that {@code bench decode --synthetic} and {@code bench serve --synthetic} run: hidden
 * 2048, 16 heads, 8 KV heads, head_dim 128, intermediate 5632, 12 layers, 8192 positions, tied embeddings, and the
 * embedded model's vocabulary (8192 tokens) with its tokenizer copied beside it, so the folder is a complete Hugging
 * Face model that other engines' converters accept (e.g. llama.cpp's {@code convert_hf_to_gguf.py} for a side-by-side
 * run on the same weights). Always written from the same seed: every copy holds the same bytes.
 */
final class SyntheticModel {
    static final String DESCRIPTION = "~0.58B random bf16 Llama (hidden 2048, 16 heads, 8 KV heads, head_dim 128, "
            + "intermediate 5632, 12 layers, vocab 8192)";

    private SyntheticModel() {
    }

    /** Writes the model into {@code dir} unless it already holds one written by this method; returns dir. */
    static Path writeIfAbsent(Path dir) throws IOException {
        if (Files.exists(dir.resolve("model.safetensors")) && Files.exists(dir.resolve("config.json"))) {
            return dir;
        }
        SafetensorsWriter.writeLlama(dir, 2048, 5632, 12, 16, 8, 128, 8192, 8192, Path.of(TqserveMain.DEFAULT_MODEL),
                42);
        return dir;
    }

    /** Writes the model to a new temp folder; the caller deletes it ({@link #deleteTree}). */
    static Path writeTemp() throws IOException {
        Path dir = Files.createTempDirectory("tqserve-synthetic-0.58b");
        System.err.println("writing the synthetic " + DESCRIPTION + " to " + dir + " ...");
        return writeIfAbsent(dir);
    }

    static void deleteTree(Path dir) throws IOException {
        try (var files = Files.list(dir)) {
            for (Path f : files.toList()) {
                Files.deleteIfExists(f);
            }
        }
        Files.deleteIfExists(dir);
    }
}
