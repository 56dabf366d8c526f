package io.tqserve.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.kv.Bf16KvCache;
import io.tqserve.kv.KvCache;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The Java forward pass against PyTorch's reference outputs: the embedded tiny Llama (trained) and the random
 * tiny models of goldens/models (Qwen2 biases, Qwen3 q/k norms + explicit head_dim + sharded + tied, old-format
 * Llama config with llama3 RoPE scaling in f16, Mistral).
 */
class ForwardParityTest {
    static CpuBackend backend;

    @BeforeAll
    static void start() {
        backend = CpuBackend.create(2);
    }

    @AfterAll
    static void stop() {
        backend.close();
    }

    static java.util.stream.Stream<String> models() {
        return java.util.stream.Stream.of("models/tiny-llama-h128", "goldens/models/qwen2-tiny-h64",
                "goldens/models/qwen3-tiny-h64", "goldens/models/llama-tiny-oldcfg", "goldens/models/mistral-tiny");
    }

    /** Loads the model, runs the body, unmaps. */
    static void withModel(String dir, java.util.function.BiConsumer<Transformer, ReferenceOutputs> body) throws Exception {
        Path path = Path.of(dir);
        ModelConfig c = ModelConfig.load(path);
        try (Safetensors st = Safetensors.open(path)) {
            body.accept(new Transformer(c, ModelWeights.load(st, c), backend), ReferenceOutputs.load(path));
        }
    }

    @ParameterizedTest
    @MethodSource("models")
    void lastPositionLogitsAndPromptNllMatchPyTorch(String dir) throws Exception {
        withModel(dir, ForwardParityTest::checkLogits);
    }

    /** As the reference computed them: a full recompute (fresh full-precision prefill) for every step. */
    @ParameterizedTest
    @MethodSource("models")
    void greedy32TokensByFullRecomputeEqualPyTorch(String dir) throws Exception {
        withModel(dir, ForwardParityTest::checkGreedyRecompute);
    }

    /** Incremental decode over the bf16 KV cache reproduces the trained model's reference tokens. */
    @org.junit.jupiter.api.Test
    void greedy32TokensWithBf16KvCacheEqualPyTorch() throws Exception {
        withModel("models/tiny-llama-h128", ForwardParityTest::checkGreedy);
    }

    static void checkGreedyRecompute(Transformer transformer, ReferenceOutputs ref) {
        ModelConfig c = transformer.config();
        for (ReferenceOutputs.Prompt p : ref.prompts()) {
            ForwardState state = new ForwardState(c);
            int[] seq = java.util.Arrays.copyOf(p.inputIds(), p.inputIds().length + p.greedy32().length);
            int len = p.inputIds().length;
            for (int i = 0; i < p.greedy32().length; i++) {
                try (KvCache cache = new Bf16KvCache(transformer.attentionShape(), backend, c.maxPositions())) {
                    float[] logits = transformer.forward(state, List.of(new Transformer.Chunk(cache, seq, 0, len, false)));
                    seq[len++] = argmax(logits, 0, c.vocabSize());
                }
            }
            assertArrayEquals(p.greedy32(), java.util.Arrays.copyOfRange(seq, p.inputIds().length, len),
                    "greedy tokens of prompt " + p.text());
        }
    }

    static void checkLogits(Transformer transformer, ReferenceOutputs ref) {
        ModelConfig c = transformer.config();
        for (ReferenceOutputs.Prompt p : ref.prompts()) {
            ForwardState state = new ForwardState(c);
            try (KvCache cache = new Bf16KvCache(transformer.attentionShape(), backend, c.maxPositions())) {
                float[] logits = transformer.forward(state,
                        List.of(new Transformer.Chunk(cache, p.inputIds(), 0, p.inputIds().length, true)));
                int n = p.inputIds().length;
                int v = c.vocabSize();
                float maxDiff = 0;
                for (int i = 0; i < v; i++) {
                    maxDiff = Math.max(maxDiff, Math.abs(logits[(n - 1) * v + i] - p.lastLogits()[i]));
                }
                assertTrue(maxDiff <= 2e-3, "last logits max abs diff " + maxDiff);
                for (int t = 1; t < n; t++) {
                    double nll = -logSoftmax(logits, (t - 1) * v, v, p.inputIds()[t]);
                    assertEquals(p.promptTokenNll()[t - 1], nll, 2e-3, "nll of token " + t);
                }
            }
        }
    }

    static void checkGreedy(Transformer transformer, ReferenceOutputs ref) {
        checkGreedyWith(transformer, ref,
                () -> new Bf16KvCache(transformer.attentionShape(), backend, transformer.config().maxPositions()));
    }

    /** Prefill then 32 greedy decode steps over a cache from {@code caches}; the tokens must equal the reference. */
    static void checkGreedyWith(Transformer transformer, ReferenceOutputs ref, java.util.function.Supplier<KvCache> caches) {
        ModelConfig c = transformer.config();
        for (ReferenceOutputs.Prompt p : ref.prompts()) {
            ForwardState state = new ForwardState(c);
            try (KvCache cache = caches.get()) {
                int[] out = new int[p.greedy32().length];
                float[] logits = transformer.forward(state, List.of(Transformer.Chunk.of(cache, p.inputIds())));
                for (int i = 0; i < out.length; i++) {
                    out[i] = argmax(logits, 0, c.vocabSize());
                    logits = transformer.forward(state, List.of(Transformer.Chunk.of(cache, new int[] {out[i]})));
                }
                assertArrayEquals(p.greedy32(), out, "greedy tokens of prompt " + p.text());
            }
        }
    }

    static int argmax(float[] x, int off, int n) {
        int best = 0;
        for (int i = 1; i < n; i++) {
            if (x[off + i] > x[off + best]) {
                best = i;
            }
        }
        return best;
    }

    static double logSoftmax(float[] x, int off, int n, int idx) {
        double max = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < n; i++) {
            max = Math.max(max, x[off + i]);
        }
        double sum = 0;
        for (int i = 0; i < n; i++) {
            sum += Math.exp(x[off + i] - max);
        }
        return x[off + idx] - max - Math.log(sum);
    }
}
