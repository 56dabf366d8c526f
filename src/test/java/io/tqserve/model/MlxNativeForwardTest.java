package io.tqserve.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.DeviceSample;
import io.tqserve.backend.DeviceSampler;
import io.tqserve.backend.DeviceStats;
import io.tqserve.backend.SamplingSpec;
import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.backend.mlx.MlxBackend;
import io.tqserve.backend.mlx.MlxOptions;
import io.tqserve.backend.mlx.MlxTestLibrary;
import io.tqserve.kv.Bf16KvCache;
import io.tqserve.kv.KvCache;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The MLX device forward in {@code native} mode (the checkpoint's bf16 for weights and activations, the default):
 * reference greedy tokens, logits against the CPU backend within a bf16 tolerance, one evaluation per batched
 * step, the bytes a decode step copies to Java, and the device memory the weights take. Skipped, with the places
 * searched, when libmlxc is absent.
 */
@Tag("mlx")
class MlxNativeForwardTest {
    static final Path DIR = Path.of("models/tiny-llama-h128");
    /** bf16's unit roundoff: 8 significant bits, so one rounding moves a value by at most 2^-8 of itself. */
    static final double BF16_U = 1.0 / 256;
    static CpuBackend cpu;
    static MlxBackend mlx;

    @BeforeEach
    void requireMlx() {
        var runtime = MlxTestLibrary.open();
        if (mlx == null) {
            cpu = CpuBackend.create(1);
            mlx = new MlxBackend(runtime, CpuBackend.create(1), MlxOptions.DEFAULTS);
        }
    }

    @AfterAll
    static void stop() {
        if (mlx != null) {
            mlx.close();
            mlx = null;
            cpu.close();
        }
    }

    static Transformer onDevice(ModelConfig c, Safetensors st) {
        return MlxForwardParityTest.onDevice(DIR, c, st, mlx);
    }

    @Test
    void greedy32TokensInNativeModeEqualTheReference() throws Exception {
        ModelConfig c = ModelConfig.load(DIR);
        try (Safetensors st = Safetensors.open(DIR); Transformer device = onDevice(c, st)) {
            assertTrue(device.deviceDescription().contains("bfloat16"), device.deviceDescription());
            ForwardParityTest.checkGreedyWith(device, ReferenceOutputs.load(DIR),
                    () -> MlxForwardParityTest.deviceCache(device, mlx));
        }
    }

    /**
     * The CPU backend computes in float32 from the bf16 weights; native MLX rounds what each matmul reads and
     * writes to bf16 (the normed inputs, q/k/v, the attention output, the MLP's activations; the residual sums stay
     * float32). Each rounding is off by at most u = 2^-8 relative, and the errors of the 6 layers' roundings add up
     * roughly as a random walk, so the logits (whose size is set by the last hidden state times the LM head) are
     * expected within a few u of their scale. The bound used is 8 u · max |logit| (about 0.3 for logits around 10;
     * measured: 2.7 u at worst over the reference prompts), which still catches a wrong op (those move logits by
     * whole units) while leaving room for bf16's accumulated rounding.
     */
    @Test
    void logitsAgreeWithTheCpuBackendWithinABf16Tolerance() throws Exception {
        ModelConfig c = ModelConfig.load(DIR);
        try (Safetensors st = Safetensors.open(DIR); Transformer device = onDevice(c, st)) {
            Transformer java = new Transformer(c, ModelWeights.load(st, c), cpu);
            double worstRatio = 0;
            for (ReferenceOutputs.Prompt p : ReferenceOutputs.load(DIR).prompts()) {
                float[] expected;
                try (KvCache cache = new Bf16KvCache(java.attentionShape(), cpu, c.maxPositions())) {
                    expected = MlxForwardParityTest.lastLogits(java, cache, p.inputIds());
                }
                float scale = 0;
                for (float v : expected) {
                    scale = Math.max(scale, Math.abs(v));
                }
                try (KvCache cache = MlxForwardParityTest.deviceCache(device, mlx)) {
                    float d = MlxForwardParityTest.maxAbsDiff(expected,
                            MlxForwardParityTest.lastLogits(device, cache, p.inputIds()));
                    worstRatio = Math.max(worstRatio, d / scale);
                    assertTrue(d <= 8 * BF16_U * scale, "prompt '" + p.text() + "': max |MLX bf16 - CPU| = " + d
                            + " with max |logit| " + scale);
                }
            }
            System.out.printf("native MLX vs CPU logits: worst max|diff| / max|logit| = %.5f (= %.2f u)%n", worstRatio,
                    worstRatio / BF16_U);
        }
    }

    @Test
    void activeMemoryAfterLoadIsWithin5PercentOfTheWeightFiles() throws Exception {
        long files;
        try (Stream<Path> s = Files.list(DIR)) {
            files = s.filter(f -> f.toString().endsWith(".safetensors")).mapToLong(f -> f.toFile().length()).sum();
        }
        ModelConfig c = ModelConfig.load(DIR);
        long before = mlx.mlx().activeMemory();
        try (Safetensors st = Safetensors.open(DIR); Transformer device = onDevice(c, st)) {
            long loaded = mlx.mlx().activeMemory() - before;
            System.out.printf("native load: %d B active for %d B of weight files (%.4f)%n", loaded, files,
                    (double) loaded / files);
            assertTrue(Math.abs(loaded - files) <= 0.05 * files, "active memory after load " + loaded
                    + " B vs weight files " + files + " B");
            // the Java forward on this backend uses the same device arrays: a matmul adds nothing lasting
            float[] x = new float[c.dim()];
            x[0] = 1f;
            float[] out = new float[c.vocabSize()];
            mlx.matmul(ModelWeights.load(st, c).lmHead(), x, 1, out);
            assertEquals(loaded, mlx.mlx().activeMemory() - before, "no second copy of any weight");
        }
    }

    /**
     * Eight sequences decode together: each step is one graph and one evaluation, and only the eight sampled token
     * ids (4 bytes each) reach Java. The tokens are the reference greedy continuations.
     */
    @Test
    void aBatchedDecodeStepOfEightSequencesIsOneEvaluationCopyingFourBytesPerSequence() throws Exception {
        ModelConfig c = ModelConfig.load(DIR);
        List<ReferenceOutputs.Prompt> prompts = ReferenceOutputs.load(DIR).prompts();
        int n = 8;
        try (Safetensors st = Safetensors.open(DIR); Transformer device = onDevice(c, st)) {
            List<KvCache> caches = new ArrayList<>();
            List<DeviceSampler> samplers = new ArrayList<>();
            ForwardState state = new ForwardState(c);
            int[] last = new int[n];
            try {
                for (int i = 0; i < n; i++) {
                    KvCache cache = MlxForwardParityTest.deviceCache(device, mlx);
                    caches.add(cache);
                    float[] logits = device.forward(state, List.of(Transformer.Chunk.of(cache,
                            prompts.get(i % prompts.size()).inputIds())));
                    last[i] = ForwardParityTest.argmax(logits, 0, c.vocabSize());
                    samplers.add(device.deviceSampler(greedy(-1)).orElseThrow());
                }
                int steps = 6;
                for (int step = 1; step <= steps; step++) {
                    List<Transformer.Chunk> chunks = new ArrayList<>();
                    for (int i = 0; i < n; i++) {
                        chunks.add(Transformer.Chunk.sampled(caches.get(i), last[i], samplers.get(i)));
                    }
                    DeviceStats before = mlx.deviceStats();
                    device.forward(state, chunks);
                    DeviceStats delta = mlx.deviceStats().since(before);
                    assertEquals(1, delta.evaluations(), "evaluations in one batched step of 8 sequences");
                    assertEquals(4L * n, delta.bytesToJava(), "bytes copied to Java in one decode step of 8");
                    for (int i = 0; i < n; i++) {
                        DeviceSample s = state.sample(i);
                        assertNotNull(s, "sequence " + i + " was sampled on the device");
                        assertEquals(prompts.get(i % prompts.size()).greedy32()[step], s.token(),
                                "sequence " + i + " step " + step);
                        last[i] = s.token();
                    }
                }
                // logprobs when asked: the chosen token's and two alternatives' (floats) plus their ids
                DeviceSampler withLogprobs = device.deviceSampler(greedy(2)).orElseThrow();
                samplers.add(withLogprobs);
                DeviceStats before = mlx.deviceStats();
                device.forward(state, List.of(Transformer.Chunk.sampled(caches.get(0), last[0], withLogprobs)));
                DeviceStats delta = mlx.deviceStats().since(before);
                assertEquals(4 + 3 * 4 + 2 * 4, delta.bytesToJava(), "token + 3 logprobs + 2 ids");
                DeviceSample s = state.sample(0);
                assertEquals(s.token(), s.topIds()[0], "greedy picks the most likely token");
                assertEquals(s.logprob(), s.topLogprobs()[0], 0f);
                assertTrue(s.logprob() < 0 && s.topLogprobs()[1] <= s.topLogprobs()[0]);
            } finally {
                samplers.forEach(DeviceSampler::close);
                caches.forEach(KvCache::close);
            }
        }
    }

    static SamplingSpec greedy(int topLogprobs) {
        return new SamplingSpec(0f, 0, 1f, 0f, 0L, 1f, 0f, 0f, Map.of(), topLogprobs, new int[0]);
    }

    @Test
    void float32ModeStillMatchesTheReference() throws Exception {
        try (MlxBackend f32 = new MlxBackend(mlx.mlx(), CpuBackend.create(1),
                MlxOptions.DEFAULTS.withDtype(MlxOptions.Dtype.FLOAT32))) {
            ModelConfig c = ModelConfig.load(DIR);
            try (Safetensors st = Safetensors.open(DIR);
                    Transformer device = MlxForwardParityTest.onDevice(DIR, c, st, f32)) {
                assertTrue(device.deviceDescription().contains("float32"), device.deviceDescription());
                int[] ids = ReferenceOutputs.load(DIR).prompts().get(0).inputIds();
                try (KvCache cache = MlxForwardParityTest.deviceCache(device, f32)) {
                    float[] logits = MlxForwardParityTest.lastLogits(device, cache, ids);
                    assertArrayEquals(new int[] {ReferenceOutputs.load(DIR).prompts().get(0).greedy32()[0]},
                            new int[] {ForwardParityTest.argmax(logits, 0, c.vocabSize())});
                }
            }
        }
    }
}
