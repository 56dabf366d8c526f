package io.tqserve.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.backend.mlx.MlxBackend;
import io.tqserve.backend.mlx.MlxTestLibrary;
import io.tqserve.model.ForwardState;
import io.tqserve.model.ModelConfig;
import io.tqserve.model.ModelWeights;
import io.tqserve.model.Safetensors;
import io.tqserve.model.Transformer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The bf16 KV cache held as MLX arrays: byte accounting, truncate, and the canonical export/import format. */
@Tag("mlx")
class MlxKvCacheTest {
    static final int[] PROMPT = {6414, 784, 4178, 294, 3326, 80, 284, 81, 90, 325};
    static CpuBackend cpu;
    static MlxBackend mlx;
    static Safetensors st;
    static Transformer onCpu;
    static Transformer onDevice;

    /** Per test, so that each one is reported as skipped, with the places searched, when libmlxc is absent. */
    @BeforeEach
    void load() throws Exception {
        var runtime = MlxTestLibrary.open();
        if (mlx != null) {
            return;
        }
        Path dir = Path.of("models/tiny-llama-h128");
        ModelConfig c = ModelConfig.load(dir);
        cpu = CpuBackend.create(2);
        mlx = new MlxBackend(runtime, CpuBackend.create(1), io.tqserve.backend.mlx.MlxOptions.DEFAULTS.withDtype(io.tqserve.backend.mlx.MlxOptions.Dtype.FLOAT32));
        st = Safetensors.open(dir);
        onCpu = new Transformer(c, ModelWeights.load(st, c), cpu);
        onDevice = new Transformer(c, ModelWeights.load(st, c), mlx,
                st.headers().keySet().stream().map(dir::resolve).toList());
    }

    @AfterAll
    static void close() {
        if (mlx != null) {
            onDevice.close();
            st.close();
            mlx.close();
            cpu.close();
            mlx = null;
        }
    }

    KvCache deviceCache() {
        KvCache c = KvCacheFactory.create(KvScheme.BF16, onDevice.attentionShape(), mlx, 512);
        assertInstanceOf(DeviceBf16KvCache.class, c);
        return c;
    }

    static float[] step(Transformer t, KvCache cache, int... tokens) {
        return Arrays.copyOf(t.forward(new ForwardState(t.config()), List.of(Transformer.Chunk.of(cache, tokens))),
                t.config().vocabSize());
    }

    @Test
    void bytesUsedEqualKvLayoutAndAllocationGrowsIn256TokenSteps() {
        KvLayout layout = onDevice.attentionShape().layout(KvScheme.BF16);
        try (KvCache c = deviceCache()) {
            assertEquals(0, c.bytesAllocated());
            step(onDevice, c, PROMPT);
            assertEquals(layout.bytesFor(10), c.bytesUsed());
            assertEquals(256L * 6144, c.bytesAllocated());
            for (int i = 0; i < 250; i++) {
                step(onDevice, c, 42);
            }
            assertEquals(layout.bytesFor(260), c.bytesUsed());
            assertEquals(512L * 6144, c.bytesAllocated());
        }
    }

    @Test
    void truncateThenContinueEqualsNeverAppended() {
        try (KvCache a = deviceCache(); KvCache b = deviceCache()) {
            step(onDevice, a, PROMPT);
            step(onDevice, a, 11);
            step(onDevice, a, 12);
            step(onDevice, a, 13);
            a.truncate(11);
            float[] afterTruncate = step(onDevice, a, 99);
            step(onDevice, b, PROMPT);
            step(onDevice, b, 11);
            assertArrayEquals(step(onDevice, b, 99), afterTruncate);
        }
    }

    @Test
    void aJavaCacheImportedIntoMlxExportsTheSameBytesAndDecodesLikeTheCpu() {
        try (KvCache java = new Bf16KvCache(onCpu.attentionShape(), cpu, 512); KvCache device = deviceCache();
                Arena arena = Arena.ofConfined()) {
            step(onCpu, java, PROMPT);
            int n = java.length();
            long perLayer = (long) n * java.shape().numKvHeads() * java.layout().bytesPerTokenPerHead();
            MemorySegment[] exported = new MemorySegment[java.shape().layers()];
            for (int layer = 0; layer < exported.length; layer++) {
                exported[layer] = arena.allocate(perLayer);
                java.exportLayer(layer, 0, n, exported[layer]);
                device.importLayer(layer, n, exported[layer]);
            }
            device.advance(n);
            assertEquals(java.bytesUsed(), device.bytesUsed());
            for (int layer = 0; layer < exported.length; layer++) {
                MemorySegment back = arena.allocate(perLayer);
                device.exportLayer(layer, 0, n, back);
                assertEquals(-1, back.mismatch(exported[layer]), "layer " + layer + " bytes");
            }
            float[] cpuNext = step(onCpu, java, 8);
            float[] mlxNext = step(onDevice, device, 8);
            float worst = 0;
            for (int i = 0; i < cpuNext.length; i++) {
                worst = Math.max(worst, Math.abs(cpuNext[i] - mlxNext[i]));
            }
            assertTrue(worst <= 1e-3f, "decode after import: max |MLX - CPU| = " + worst);
        }
    }

    @Test
    void closedCacheRefusesWork() {
        KvCache c = deviceCache();
        c.close();
        c.close();
        assertThrows(IllegalStateException.class, () -> step(onDevice, c, 1));
    }
}
