package io.tqserve.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.DeviceStats;
import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.backend.mlx.MlxBackend;
import io.tqserve.backend.mlx.MlxOptions;
import io.tqserve.backend.mlx.MlxTestLibrary;
import io.tqserve.kv.ForwardingKvCache;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import io.tqserve.kv.turbo.AttentionPath;
import io.tqserve.kv.turbo.DeviceTurboKvCache;
import io.tqserve.kv.turbo.TurboQuantKvCache;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/**
 * The TurboQuant KV cache on the MLX device ({@code tqserve.backend.mlx.dtype=float32}, tiny-llama-h128) against
 * the Java {@link TurboQuantKvCache}: export bytes, greedy tokens, snapshots across backends, evaluations per step,
 * device memory per token. Skipped, with the places searched, when libmlxc is absent.
 */
@Tag("mlx")
class MlxTurboKvCacheTest {
    static final Path DIR = Path.of("models/tiny-llama-h128");
    static final int[] PROMPT = {6414, 784, 4178, 294, 3326, 80, 284, 81, 90, 325};
    static CpuBackend cpu;
    static MlxBackend mlx;
    static Safetensors st;
    static ModelConfig config;
    static Transformer onCpu;
    static Transformer onDevice;

    @BeforeEach
    void load() throws Exception {
        var runtime = MlxTestLibrary.open();
        if (mlx != null) {
            return;
        }
        config = ModelConfig.load(DIR);
        cpu = CpuBackend.create(2);
        mlx = new MlxBackend(runtime, CpuBackend.create(1), MlxOptions.DEFAULTS.withDtype(MlxOptions.Dtype.FLOAT32));
        st = Safetensors.open(DIR);
        onCpu = new Transformer(config, ModelWeights.load(st, config), cpu);
        onDevice = MlxForwardParityTest.onDevice(DIR, config, st, mlx);
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

    static KvCache javaCache(String scheme, int quantizedKvStart) {
        return new TurboQuantKvCache((KvScheme.Turbo) KvScheme.parse(scheme), onCpu.attentionShape(), cpu,
                config.maxPositions(), quantizedKvStart, AttentionPath.FUSED);
    }

    static KvCache deviceCache(String scheme, int quantizedKvStart) {
        KvCache c = KvCacheFactory.create(KvScheme.parse(scheme), onDevice.attentionShape(), mlx, config.maxPositions(),
                quantizedKvStart);
        assertInstanceOf(DeviceTurboKvCache.class, c);
        return c;
    }

    static float[] step(Transformer t, ForwardState state, KvCache cache, int... tokens) {
        return t.forward(state, List.of(Transformer.Chunk.of(cache, tokens)));
    }

    static int argmax(float[] logits) {
        return ForwardParityTest.argmax(logits, 0, config.vocabSize());
    }

    static MemorySegment[] export(KvCache c, Arena arena) {
        MemorySegment[] out = new MemorySegment[c.shape().layers()];
        for (int l = 0; l < out.length; l++) {
            out[l] = arena.allocate((long) c.length() * c.shape().numKvHeads() * c.layout().bytesPerTokenPerHead());
            c.exportLayer(l, 0, c.length(), out[l]);
        }
        return out;
    }

    static void assertSameBytes(MemorySegment[] expected, MemorySegment[] actual, String what) {
        for (int l = 0; l < expected.length; l++) {
            assertEquals(-1, expected[l].mismatch(actual[l]), what + ": first differing byte of layer " + l);
        }
    }

    /**
     * The Java forward on the CPU writes the same K/V rows into a Java turbo cache and (through the SPI's attend) into
     * the device cache, for a 10-token prefill and 64 greedy decode steps: the exports are equal byte for byte, and
     * the device attention's outputs agree with the Java fused path's.
     */
    @ParameterizedTest
    @ValueSource(strings = {"turbo:k8v3", "turbo:k4v2", "turbo:k8v8", "turbo:k5v5"})
    void sameKvRowsGiveTheJavaCachesExportBytes(String scheme) {
        for (int quantizedKvStart : scheme.equals("turbo:k8v3") ? new int[] {0, 4} : new int[] {0}) {
            try (KvCache java = javaCache(scheme, quantizedKvStart);
                    KvCache device = deviceCache(scheme, quantizedKvStart);
                    Arena arena = Arena.ofConfined()) {
                Tee tee = new Tee(java, device);
                ForwardState state = new ForwardState(config);
                int next = argmax(step(onCpu, state, tee, PROMPT));
                for (int i = 0; i < 64; i++) {
                    next = argmax(step(onCpu, state, tee, next));
                }
                assertEquals(java.bytesUsed(), device.bytesUsed());
                assertSameBytes(export(java, arena), export(device, arena), scheme + " start " + quantizedKvStart);
                assertTrue(tee.worst <= 2e-4f, scheme + ": max |device attention - Java fused| = " + tee.worst);
            }
        }
    }

    /** KV bytes per token of turbo:k8v3 on the embedded model: 2400, as the Java cache accounts. */
    @Test
    void byteAccountingEqualsTheJavaCache() {
        try (KvCache device = deviceCache("turbo:k8v3", 0)) {
            assertEquals(2400, device.layout().bytesPerToken());
            step(onDevice, new ForwardState(config), device, PROMPT);
            assertEquals(2400L * PROMPT.length, device.bytesUsed());
            assertEquals(2400L * 256, device.bytesAllocated());
        }
    }

    /** Greedy 32 tokens of the turbo lane on the MLX device equal the turbo lane on the CPU, five reference prompts. */
    @Test
    void greedyTokensEqualTheCpuTurboLane() throws Exception {
        String scheme = "turbo:k8v3";
        for (ReferenceOutputs.Prompt p : ReferenceOutputs.load(DIR).prompts()) {
            int[] expected = greedy(onCpu, javaCache(scheme, 0), p.inputIds(), 32);
            int[] actual = greedy(onDevice, deviceCache(scheme, 0), p.inputIds(), 32);
            assertArrayEquals(expected, actual, scheme + ", prompt '" + p.text() + "'");
        }
    }

    /**
     * A snapshot file written from a Java turbo cache on the CPU restores into the device cache and continues with
     * the CPU's tokens; a snapshot of the device cache restores on the CPU and continues with the device's tokens.
     */
    @Test
    void snapshotsMoveBetweenTheCpuAndTheDevice(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        String fp = "ab".repeat(32);
        KvScheme scheme = KvScheme.parse("turbo:k8v3");
        for (boolean fromCpu : new boolean[] {true, false}) {
            Transformer src = fromCpu ? onCpu : onDevice;
            Transformer dst = fromCpu ? onDevice : onCpu;
            try (KvCache a = fromCpu ? javaCache("turbo:k8v3", 0) : deviceCache("turbo:k8v3", 0);
                    KvCache b = fromCpu ? deviceCache("turbo:k8v3", 0) : javaCache("turbo:k8v3", 0);
                    Arena arena = Arena.ofConfined()) {
                ForwardState sa = new ForwardState(config);
                int[] tokens = java.util.Arrays.copyOf(PROMPT, PROMPT.length + 8);
                float[] logits = step(src, sa, a, PROMPT);
                for (int i = 0; i < 8; i++) {
                    tokens[PROMPT.length + i] = argmax(logits);
                    logits = step(src, sa, a, tokens[PROMPT.length + i]);
                }
                Path file = dir.resolve(fromCpu ? "cpu.tqkv" : "mlx.tqkv");
                io.tqserve.kv.store.KvSnapshot.capture(a, tokens, java.util.Arrays.copyOf(logits, config.vocabSize()),
                        fp, fp, arena).write(file);
                io.tqserve.kv.store.KvSnapshot snap = io.tqserve.kv.store.KvSnapshot.read(file, scheme, fp, fp, arena);
                snap.restoreInto(b);
                assertSameBytes(export(a, arena), export(b, arena), "restored cache");
                int[] expected = new int[16];
                int[] actual = new int[16];
                float[] la = snap.logits();
                float[] lb = snap.logits();
                ForwardState sb = new ForwardState(config);
                for (int i = 0; i < 16; i++) {
                    expected[i] = argmax(la);
                    actual[i] = argmax(lb);
                    la = step(src, sa, a, expected[i]);
                    lb = step(dst, sb, b, actual[i]);
                }
                assertArrayEquals(expected, actual, (fromCpu ? "CPU -> MLX" : "MLX -> CPU") + " continuation");
            }
        }
    }

    /** One MLX evaluation per turbo decode step: the store, the attention and the sampling are one graph. */
    @Test
    void oneEvaluationPerDecodeStep() {
        try (KvCache c = deviceCache("turbo:k8v3", 4)) {
            ForwardState state = new ForwardState(config);
            int next = argmax(step(onDevice, state, c, PROMPT));
            long before = mlx.mlx().evaluations();
            for (int i = 0; i < 16; i++) {
                next = argmax(step(onDevice, state, c, next));
            }
            assertEquals(16, mlx.mlx().evaluations() - before, "evaluations over 16 turbo decode steps");
        }
    }

    /**
     * Over 1,000 decode steps (1,024 tokens, four 256-token growths) MLX's active memory grows by the cache's
     * accounted bytes (2400 B/token for turbo:k8v3) within 1 %, and returns to its baseline when the cache closes.
     */
    @Test
    void activeMemoryGrowsByTheAccountedBytesPerToken() {
        int[] prompt = new int[24];
        System.arraycopy(PROMPT, 0, prompt, 0, PROMPT.length);
        java.util.Arrays.fill(prompt, PROMPT.length, prompt.length, 42);
        greedy(onDevice, deviceCache("turbo:k8v3", 0), prompt, 2); // warm: MLX's compiled kernels, the RoPE table
        mlx.mlx().clearCache();
        long baseline = mlx.mlx().activeMemory();
        long used;
        try (KvCache c = deviceCache("turbo:k8v3", 0)) {
            ForwardState state = new ForwardState(config);
            int next = argmax(step(onDevice, state, c, prompt));
            for (int i = 0; i < 1000; i++) {
                next = argmax(step(onDevice, state, c, next));
            }
            assertEquals(1024, c.length());
            used = c.bytesUsed();
            assertEquals(2400L * 1024, used);
            long grown = mlx.mlx().activeMemory() - baseline;
            System.out.printf("turbo:k8v3 on MLX: active memory +%d bytes for %d accounted (%.4f)%n", grown, used,
                    (double) grown / used);
            assertTrue(Math.abs(grown - used) <= used / 100, "active memory grew " + grown + " for " + used + " accounted");
        }
        long after = mlx.mlx().activeMemory() - baseline;
        assertTrue(Math.abs(after) <= used / 100, "after close, active memory is " + after + " bytes off its baseline");
    }

    static int[] greedy(Transformer t, KvCache cache, int[] prompt, int n) {
        try (cache) {
            ForwardState state = new ForwardState(config);
            int[] out = new int[n];
            float[] logits = step(t, state, cache, prompt);
            for (int i = 0; i < n; i++) {
                out[i] = argmax(logits);
                logits = step(t, state, cache, out[i]);
            }
            return out;
        }
    }

    /** A KV cache that stores every pass in two caches and answers with the first one's attention. */
    static final class Tee extends ForwardingKvCache {
        final KvCache other;
        float worst;

        Tee(KvCache main, KvCache other) {
            super(main);
            this.other = other;
        }

        @Override
        public void attend(int layer, int rowOffset, int rows, float[] q, float[] k, float[] v, float[] out) {
            float[] copy = out.clone();
            other.attend(layer, rowOffset, rows, q, k, v, copy);
            main.attend(layer, rowOffset, rows, q, k, v, out);
            int qDim = main.shape().qDim();
            for (int i = rowOffset * qDim; i < (rowOffset + rows) * qDim; i++) {
                worst = Math.max(worst, Math.abs(out[i] - copy[i]));
            }
        }

        @Override
        public void advance(int rows) {
            main.advance(rows);
            other.advance(rows);
        }

        @Override
        public void importLayer(int layer, int count, MemorySegment src) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void truncate(int tokens) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void close() { // the caller closes both caches
        }
    }
}
