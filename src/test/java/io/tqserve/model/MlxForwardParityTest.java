package io.tqserve.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.backend.mlx.MlxBackend;
import io.tqserve.backend.mlx.MlxTestLibrary;
import io.tqserve.kv.Bf16KvCache;
import io.tqserve.kv.DeviceBf16KvCache;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The MLX device forward (float32 compute) against the CPU backend's Java forward and PyTorch's reference
 * outputs. Skipped, with the places searched, when libmlxc is absent.
 */
@Tag("mlx")
class MlxForwardParityTest {
    static final String TINY = "models/tiny-llama-h128";
    static CpuBackend cpu;
    static MlxBackend mlx;

    /** Per test, so that each one is reported as skipped, with the places searched, when libmlxc is absent. */
    @BeforeEach
    void requireMlx() {
        var runtime = MlxTestLibrary.open();
        if (mlx == null) {
            cpu = CpuBackend.create(2);
            mlx = new MlxBackend(runtime, CpuBackend.create(2), io.tqserve.backend.mlx.MlxOptions.DEFAULTS.withDtype(io.tqserve.backend.mlx.MlxOptions.Dtype.FLOAT32));
        }
    }

    @AfterAll
    static void stop() {
        if (mlx != null) {
            mlx.close();
            mlx = null;
        }
        if (cpu != null) {
            cpu.close();
            cpu = null;
        }
    }

    /** A transformer whose forward runs on the MLX device (weights loaded by MLX from the files). */
    static Transformer onDevice(Path dir, ModelConfig c, Safetensors st) {
        return onDevice(dir, c, st, mlx);
    }

    static Transformer onDevice(Path dir, ModelConfig c, Safetensors st, MlxBackend on) {
        List<Path> files = st.headers().keySet().stream().map(dir::resolve).toList();
        Transformer t = new Transformer(c, ModelWeights.load(st, c), on, files);
        assertNotNull(t.deviceDescription(), "the MLX backend offers a device decoder");
        return t;
    }

    static KvCache deviceCache(Transformer t) {
        return deviceCache(t, mlx);
    }

    static KvCache deviceCache(Transformer t, MlxBackend on) {
        KvCache cache = KvCacheFactory.create(KvScheme.BF16, t.attentionShape(), on, t.config().maxPositions());
        assertInstanceOf(DeviceBf16KvCache.class, cache);
        return cache;
    }

    static float[] lastLogits(Transformer t, KvCache cache, int[] ids) {
        float[] logits = t.forward(new ForwardState(t.config()), List.of(Transformer.Chunk.of(cache, ids)));
        return java.util.Arrays.copyOf(logits, t.config().vocabSize());
    }

    static float maxAbsDiff(float[] a, float[] b) {
        float m = 0;
        for (int i = 0; i < a.length; i++) {
            m = Math.max(m, Math.abs(a[i] - b[i]));
        }
        return m;
    }

    @Test
    void lastPositionLogitsMatchTheCpuBackendWithin1e3() throws Exception {
        Path dir = Path.of(TINY);
        ModelConfig c = ModelConfig.load(dir);
        try (Safetensors st = Safetensors.open(dir); Transformer device = onDevice(dir, c, st)) {
            Transformer java = new Transformer(c, ModelWeights.load(st, c), cpu);
            float worst = 0;
            for (ReferenceOutputs.Prompt p : ReferenceOutputs.load(dir).prompts()) {
                float[] expected;
                try (KvCache cache = new Bf16KvCache(java.attentionShape(), cpu, c.maxPositions())) {
                    expected = lastLogits(java, cache, p.inputIds());
                }
                try (KvCache cache = deviceCache(device)) {
                    float d = maxAbsDiff(expected, lastLogits(device, cache, p.inputIds()));
                    worst = Math.max(worst, d);
                    assertTrue(d <= 1e-3f, "prompt '" + p.text() + "': max |MLX - CPU| = " + d);
                }
            }
            System.out.println("MLX vs CPU last-position logits, worst max abs diff over prompts: " + worst);
        }
    }

    @Test
    void greedy32TokensWithTheMlxKvCacheEqualTheReference() throws Exception {
        Path dir = Path.of(TINY);
        ModelConfig c = ModelConfig.load(dir);
        try (Safetensors st = Safetensors.open(dir); Transformer device = onDevice(dir, c, st)) {
            ForwardParityTest.checkGreedyWith(device, ReferenceOutputs.load(dir), () -> deviceCache(device));
        }
    }

    @Test
    void javaForwardOnTheMlxBackendMatchesTheCpuBackend() throws Exception {
        // The Java forward (a transformer without weight files) over the same weights a device decoder loaded: its
        // matmuls run on MLX against the decoder's arrays (no second copy), attention over the MLX KV cache.
        Path dir = Path.of(TINY);
        ModelConfig c = ModelConfig.load(dir);
        try (Safetensors st = Safetensors.open(dir)) {
            ModelWeights shared = ModelWeights.load(st, c);
            List<Path> files = st.headers().keySet().stream().map(dir::resolve).toList();
            Transformer device = new Transformer(c, shared, mlx, files);
            Transformer hybrid = new Transformer(c, shared, mlx);
            long evals = mlx.mlx().evaluations();
            Transformer java = new Transformer(c, ModelWeights.load(st, c), cpu);
            ReferenceOutputs.Prompt p = ReferenceOutputs.load(dir).prompts().get(0);
            try (KvCache a = deviceCache(hybrid); KvCache b = new Bf16KvCache(java.attentionShape(), cpu, c.maxPositions())) {
                float d = maxAbsDiff(lastLogits(java, b, p.inputIds()), lastLogits(hybrid, a, p.inputIds()));
                assertTrue(d <= 1e-3f, "prefill: max |MLX - CPU| = " + d);
                int next = ForwardParityTest.argmax(lastLogits(java, b, new int[] {p.greedy32()[0]}), 0, c.vocabSize());
                int nextMlx = ForwardParityTest.argmax(lastLogits(hybrid, a, new int[] {p.greedy32()[0]}), 0, c.vocabSize());
                assertEquals(p.greedy32()[1], next);
                assertEquals(next, nextMlx);
                assertEquals(b.length(), a.length());
                assertTrue(mlx.mlx().evaluations() - evals > 2L * 7 * c.numLayers(), "the matmuls ran on MLX");
            } finally {
                device.close();
            }
        }
    }

    /** Qwen2 biases, Qwen3 q/k norms + sharded + tied, llama3 RoPE scaling in f16, Mistral: against PyTorch. */
    @ParameterizedTest
    @ValueSource(strings = {"goldens/models/qwen2-tiny-h64", "goldens/models/qwen3-tiny-h64",
            "goldens/models/llama-tiny-oldcfg", "goldens/models/mistral-tiny", TINY})
    void lastPositionLogitsMatchPyTorch(String model) throws Exception {
        Path dir = Path.of(model);
        ModelConfig c = ModelConfig.load(dir);
        try (Safetensors st = Safetensors.open(dir); Transformer device = onDevice(dir, c, st)) {
            for (ReferenceOutputs.Prompt p : ReferenceOutputs.load(dir).prompts()) {
                try (KvCache cache = deviceCache(device)) {
                    float d = maxAbsDiff(p.lastLogits(), lastLogits(device, cache, p.inputIds()));
                    assertTrue(d <= 2e-3f, model + " prompt '" + p.text() + "': max |MLX - PyTorch| = " + d);
                }
            }
        }
    }

    @Test
    void greedy32TokensFromAFreshPrefillEveryStepEqualTheReference() throws Exception {
        Path dir = Path.of(TINY);
        ModelConfig c = ModelConfig.load(dir);
        try (Safetensors st = Safetensors.open(dir); Transformer device = onDevice(dir, c, st)) {
            for (ReferenceOutputs.Prompt p : ReferenceOutputs.load(dir).prompts()) {
                int[] seq = java.util.Arrays.copyOf(p.inputIds(), p.inputIds().length + p.greedy32().length);
                int len = p.inputIds().length;
                for (int i = 0; i < p.greedy32().length; i++) {
                    try (KvCache cache = deviceCache(device)) {
                        seq[len] = ForwardParityTest.argmax(lastLogits(device, cache, java.util.Arrays.copyOf(seq, len)), 0,
                                c.vocabSize());
                        len++;
                    }
                }
                assertArrayEquals(p.greedy32(), java.util.Arrays.copyOfRange(seq, p.inputIds().length, len));
            }
        }
    }
}
