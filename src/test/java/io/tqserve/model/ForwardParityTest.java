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
import org.junit.jupiter.api.Test;

/** The Java forward pass against PyTorch's reference outputs for the embedded tiny Llama. */
class ForwardParityTest {
    static final Path MODEL = Path.of("models/tiny-llama-h128");
    static Safetensors st;
    static Transformer transformer;
    static ReferenceOutputs ref;
    static CpuBackend backend;

    @BeforeAll
    static void load() throws Exception {
        ModelConfig c = ModelConfig.load(MODEL);
        st = Safetensors.open(MODEL);
        backend = CpuBackend.create(2);
        transformer = new Transformer(c, ModelWeights.load(st, c), backend);
        ref = ReferenceOutputs.load(MODEL);
    }

    @AfterAll
    static void close() {
        st.close();
        backend.close();
    }

    @Test
    void lastPositionLogitsAndPromptNllMatchPyTorch() {
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

    @Test
    void greedy32TokensEqualPyTorch() {
        ModelConfig c = transformer.config();
        for (ReferenceOutputs.Prompt p : ref.prompts()) {
            ForwardState state = new ForwardState(c);
            try (KvCache cache = new Bf16KvCache(transformer.attentionShape(), backend, c.maxPositions())) {
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
