package io.tqserve.kv;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The capacity table of docs/scale-out.md, computed here from {@link KvLayout}'s exact bytes per token and the
 * models' weight bytes (the embedded model's files; parameter counts of the Qwen2.5-0.5B and Llama-3.1-8B shapes at
 * bf16): the document must contain it verbatim, so it cannot drift from the code.
 */
class ScaleOutCapacityTest {
    static final int CONVERSATION = 8192;
    static final long MB = 1L << 20;
    static final long GB = 1L << 30;

    /** A decoder shape; params counts weights as Hugging Face stores them (tied embeddings once). */
    record Shape(String name, int vocab, int hidden, int intermediate, int layers, int heads, int kvHeads, int headDim,
            boolean tied, boolean qkvBias) {
        long params() {
            long attn = (long) hidden * heads * headDim * 2 + (long) hidden * kvHeads * headDim * 2;
            long bias = qkvBias ? (long) (heads + 2 * kvHeads) * headDim : 0;
            long perLayer = attn + bias + 3L * hidden * intermediate + 2L * hidden;
            return perLayer * layers + (long) vocab * hidden * (tied ? 1 : 2) + hidden;
        }
    }

    static final Shape TINY = new Shape("tiny-llama-h128 (embedded)", 8192, 512, 1408, 6, 4, 2, 128, true, false);
    static final Shape QWEN_05B = new Shape("Qwen2.5-0.5B", 151936, 896, 4864, 24, 14, 2, 64, true, true);
    static final Shape LLAMA_8B = new Shape("Llama-3.1-8B", 128256, 4096, 14336, 32, 32, 8, 128, false, false);

    static long embeddedWeightBytes() throws IOException {
        try (Stream<Path> files = Files.list(Path.of("models/tiny-llama-h128"))) {
            return files.filter(p -> p.toString().endsWith(".safetensors")).mapToLong(p -> p.toFile().length()).sum();
        }
    }

    static String size(long bytes) {
        return bytes >= GB ? String.format(Locale.ROOT, "%.2f GB", (double) bytes / GB)
                : String.format(Locale.ROOT, "%.1f MB", (double) bytes / MB);
    }

    static String table() throws IOException {
        StringBuilder sb = new StringBuilder();
        sb.append("| model (layers × KV heads × head dim) | weights | lane: KV scheme | KV bytes/token | one 8k-token "
                + "conversation | 8k conversations in 256 MB | in 512 MB | in 4 GB | in 16 GB |\n");
        sb.append("|---|---|---|---|---|---|---|---|---|\n");
        for (Shape s : List.of(TINY, QWEN_05B, LLAMA_8B)) {
            long weights = s == TINY ? embeddedWeightBytes() : 2 * s.params();
            for (KvScheme scheme : List.of(KvScheme.parse("bf16"), KvScheme.parse("turbo:k8v3"))) {
                KvLayout layout = KvLayout.of(scheme, s.layers(), s.kvHeads(), s.headDim());
                long perConversation = layout.bytesFor(CONVERSATION);
                sb.append(String.format(Locale.ROOT, "| %s (%d × %d × %d) | %s | %s: %s | %,d | %s | %d | %d | %d | %d |%n",
                        s.name(), s.layers(), s.kvHeads(), s.headDim(), size(weights),
                        scheme instanceof KvScheme.Bf16 ? "batched" : "turbo", scheme.id(), layout.bytesPerToken(),
                        size(perConversation), 256 * MB / perConversation, 512 * MB / perConversation,
                        4 * GB / perConversation, 16 * GB / perConversation));
            }
        }
        return sb.toString();
    }

    @Test
    void weightBytesOfTheShapesMatchTheirPublishedParameterCounts() throws IOException {
        assertThat(QWEN_05B.params()).isEqualTo(494_032_768L);
        assertThat(LLAMA_8B.params()).isEqualTo(8_030_261_248L);
        // The embedded model's files: its parameters at bf16 plus the safetensors headers.
        assertThat(embeddedWeightBytes()).isBetween(2 * TINY.params(), 2 * TINY.params() + 3 * 4096);
    }

    @Test
    void docsScaleOutHoldsTheTableComputedFromKvLayout() throws IOException {
        String table = table();
        System.out.println(table);
        assertThat(Files.readString(Path.of("docs/scale-out.md"))).contains(table);
    }
}
