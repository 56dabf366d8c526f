package io.tqserve.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import io.tqserve.backend.DeviceSampler;
import io.tqserve.backend.DeviceStats;
import io.tqserve.backend.SamplingSpec;
import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.backend.mlx.MlxBackend;
import io.tqserve.backend.mlx.MlxOptions;
import io.tqserve.backend.mlx.MlxTestLibrary;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The MLX decoder's batched decode step (native bf16 caches, greedy sampling on the device): its graph has the same
 * MLX ops for 1, 2, 4 and 8 sequences (one attention call per layer over the padded batch, one RoPE with per-row
 * positions, one argmax), it is one evaluation, and each sequence gets the tokens it gets alone. The prompts have
 * different lengths, so the batch's rows are padded and masked. Skipped when libmlxc is absent.
 */
@Tag("mlx")
class MlxBatchedStepTest {
    static final int[] WORDS = {6414, 784, 4178, 294, 3326, 80, 284, 81, 90, 325};
    static MlxBackend mlx;
    static Safetensors st;
    static Transformer t;

    @BeforeEach
    void load() throws Exception {
        var runtime = MlxTestLibrary.open();
        if (mlx != null) {
            return;
        }
        Path dir = Path.of("models/tiny-llama-h128");
        ModelConfig c = ModelConfig.load(dir);
        mlx = new MlxBackend(runtime, CpuBackend.create(1), MlxOptions.DEFAULTS);
        st = Safetensors.open(dir);
        t = new Transformer(c, ModelWeights.load(st, c), mlx, st.headers().keySet().stream().map(dir::resolve).toList());
    }

    @AfterAll
    static void close() {
        if (mlx != null) {
            t.close();
            st.close();
            mlx.close();
            mlx = null;
        }
    }

    /** Prompt {@code i}: 3 + 5·i tokens. */
    static int[] prompt(int i) {
        int[] p = new int[3 + 5 * i];
        for (int j = 0; j < p.length; j++) {
            p[j] = (WORDS[j % WORDS.length] + 37 * i + j) % 6000;
        }
        return p;
    }

    /** The greedy tokens of prompts {@code first .. first+n-1} decoded together, and per step the device's counters. */
    record Run(int[][] tokens, List<DeviceStats> steps) {
    }

    static Run decode(int first, int n, int steps) {
        List<KvCache> caches = new ArrayList<>();
        List<DeviceSampler> samplers = new ArrayList<>();
        ForwardState state = new ForwardState(t.config());
        int vocab = t.config().vocabSize();
        try {
            int[] last = new int[n];
            int[][] tokens = new int[n][steps + 1];
            for (int i = 0; i < n; i++) {
                int[] p = prompt(first + i);
                KvCache cache = KvCacheFactory.create(KvScheme.BF16, t.attentionShape(), mlx, 512);
                caches.add(cache);
                float[] logits = t.forward(state, List.of(Transformer.Chunk.of(cache, p)));
                last[i] = argmax(logits, vocab);
                tokens[i][0] = last[i];
                samplers.add(t.deviceSampler(new SamplingSpec(0f, 0, 1f, 0f, 0L, 1f, 0f, 0f, Map.of(), -1, p))
                        .orElseThrow());
            }
            List<DeviceStats> perStep = new ArrayList<>();
            for (int step = 0; step < steps; step++) {
                List<Transformer.Chunk> chunks = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    chunks.add(Transformer.Chunk.sampled(caches.get(i), last[i], samplers.get(i)));
                }
                DeviceStats before = mlx.deviceStats();
                t.forward(state, chunks);
                perStep.add(mlx.deviceStats().since(before));
                for (int i = 0; i < n; i++) {
                    assertNotNull(state.sample(i), "sequence " + i + " sampled on the device");
                    last[i] = state.sample(i).token();
                    tokens[i][step + 1] = last[i];
                }
            }
            return new Run(tokens, perStep);
        } finally {
            samplers.forEach(DeviceSampler::close);
            caches.forEach(KvCache::close);
        }
    }

    static int argmax(float[] x, int n) {
        int best = 0;
        for (int i = 1; i < n; i++) {
            if (x[i] > x[best]) {
                best = i;
            }
        }
        return best;
    }

    @Test
    void aDecodeStepIssuesTheSameOpsForOneToEightSequences() {
        long one = -1;
        for (int n : new int[] {1, 2, 4, 8}) {
            Run r = decode(0, n, 3);
            for (DeviceStats s : r.steps()) {
                assertEquals(1, s.evaluations(), n + " sequences: one evaluation per step");
            }
            long ops = r.steps().get(r.steps().size() - 1).ops();
            if (one < 0) {
                one = ops;
            }
            System.out.printf("%d sequences: %d MLX ops per decode step%n", n, ops);
            assertEquals(one, ops, "MLX ops of a decode step of " + n + " sequences vs one");
            assertEquals(ops, r.steps().get(0).ops(), n + " sequences: every decode step issues the same ops");
        }
    }

    @Test
    void eightSequencesTogetherDecodeTheTokensEachDecodesAlone() {
        int n = 8;
        int steps = 12;
        Run together = decode(0, n, steps);
        for (int i = 0; i < n; i++) {
            Run alone = decode(i, 1, steps);
            assertArrayEquals(alone.tokens()[0], together.tokens()[i], "prompt " + i + " alone vs in a batch of 8");
        }
    }
}
