package io.tqserve.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.backend.mlx.MlxBackend;
import io.tqserve.backend.mlx.MlxTestLibrary;
import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** No leak: after 1,000 decode steps on the MLX device, closing the cache brings MLX memory back to baseline. */
@Tag("mlx")
class MlxDecodeMemoryTest {

    @Test
    void activeMemoryAndArrayHandlesReturnToBaselineAfter1000DecodeSteps() throws Exception {
        Mlx runtime = MlxTestLibrary.open();
        Path dir = Path.of("models/tiny-llama-h128");
        ModelConfig c = ModelConfig.load(dir);
        try (MlxBackend mlx = new MlxBackend(runtime, CpuBackend.create(1), io.tqserve.backend.mlx.MlxOptions.DEFAULTS.withDtype(io.tqserve.backend.mlx.MlxOptions.Dtype.FLOAT32));
                Safetensors st = Safetensors.open(dir);
                Transformer t = new Transformer(c, ModelWeights.load(st, c), mlx,
                        st.headers().keySet().stream().map(dir::resolve).toList())) {
            ForwardState state = new ForwardState(c);
            int[] prompt = ReferenceOutputs.load(dir).prompts().get(0).inputIds();
            runtime.clearCache();
            long baseline = runtime.activeMemory();
            long baselineArrays = runtime.liveArrays();
            long kvAfter = 0;
            long activeAt1000 = 0;
            try (KvCache cache = KvCacheFactory.create(KvScheme.BF16, t.attentionShape(), mlx, 1100)) {
                float[] logits = t.forward(state, List.of(Transformer.Chunk.of(cache, prompt)));
                int[] one = new int[1];
                for (int step = 0; step < 1000; step++) {
                    one[0] = ForwardParityTest.argmax(logits, 0, c.vocabSize());
                    logits = t.forward(state, List.of(Transformer.Chunk.of(cache, one)));
                }
                assertEquals(prompt.length + 1000, cache.length());
                kvAfter = cache.bytesAllocated();
                activeAt1000 = runtime.activeMemory();
                // the cache holds 1,024 token slots (4 growth steps of 256) of bf16 K and V
                assertEquals(1024L * c.numLayers() * 2 * c.kvDim() * 2, kvAfter);
                assertTrue(activeAt1000 - baseline >= kvAfter, "KV arrays are counted by MLX");
            }
            runtime.clearCache();
            long after = runtime.activeMemory();
            System.out.printf("MLX active memory: baseline %d B, after 1000 decode steps %d B (KV %d B), after closing "
                    + "the cache %d B; live array handles %d -> %d%n", baseline, activeAt1000, kvAfter, after,
                    baselineArrays, runtime.liveArrays());
            assertEquals(baseline, after, "MLX active memory back to baseline");
            assertEquals(baselineArrays, runtime.liveArrays(), "every mlx_array_new has its mlx_array_free");
        }
    }
}
