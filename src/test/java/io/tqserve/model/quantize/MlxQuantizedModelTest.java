package io.tqserve.model.quantize;

import static io.tqserve.model.quantize.QuantizedModels.TINY;
import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.backend.BackendSelector;
import io.tqserve.backend.ComputeBackend;
import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.backend.mlx.MlxBackend;
import io.tqserve.backend.mlx.MlxOptions;
import io.tqserve.backend.mlx.MlxTestLibrary;
import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.ForwardState;
import io.tqserve.model.Model;
import io.tqserve.model.Safetensors;
import io.tqserve.model.Transformer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Quantized copies of the embedded tiny Llama (made by the quantize verb's code) on the MLX device decoder against
 * the CPU backend's Java forward over the same files: teacher-forced logits and 32 greedy tokens. The logits are
 * compared as the absolute max difference over every position and vocabulary entry: the same tolerance (1e-3) the
 * dense MLX parity tests use, with the logits of this model within about ±15, so 1e-3 is a relative error below
 * 1e-4 of the largest logit (printed). Skipped when libmlxc is absent.
 */
@Tag("mlx")
class MlxQuantizedModelTest {
    static final int[] TOKENS = QuantizedModelTest.TOKENS;
    static final int GREEDY = 32;
    static CpuBackend cpu;
    static Mlx runtime;
    static MlxBackend float32;
    static MlxBackend nativeDtype;
    @TempDir
    static Path tmp;

    @BeforeEach
    void requireMlx() {
        Mlx r = MlxTestLibrary.open();
        if (runtime == null) {
            runtime = r;
            cpu = CpuBackend.create(2);
            float32 = new MlxBackend(r, CpuBackend.create(1), MlxOptions.DEFAULTS.withDtype(MlxOptions.Dtype.FLOAT32));
            nativeDtype = new MlxBackend(r, CpuBackend.create(1), MlxOptions.DEFAULTS);
        }
    }

    @AfterAll
    static void stop() {
        for (ComputeBackend b : new ComputeBackend[] {float32, nativeDtype, cpu}) {
            if (b != null) {
                b.close();
            }
        }
    }

    static Path quantized(String name, WeightQuantizer.Options o) throws Exception {
        Path out = tmp.resolve(name);
        if (!out.toFile().isDirectory()) {
            WeightQuantizer.run(TINY, out, o, null);
        }
        return out;
    }

    static Path plain(int bits) throws Exception {
        return quantized("q" + bits, new WeightQuantizer.Options(bits, 64, null, false, 1, null));
    }

    /** Teacher-forced logits of every position, and 32 greedy tokens after TOKENS, on {@code backend}. */
    record Run(float[] logits, int[] greedy) {
    }

    static Run run(Path dir, ComputeBackend backend) throws Exception {
        try (Model m = Model.load(dir, backend)) {
            Transformer t = m.transformer();
            assertThat(t.deviceDescription() != null).as("device decoder on " + backend.name())
                    .isEqualTo(backend != cpu);
            float[] logits = QuantizedModels.logits(m, backend, TOKENS);
            int vocab = m.config().vocabSize();
            int[] greedy = new int[GREEDY];
            ForwardState state = new ForwardState(m.config());
            try (KvCache cache = KvCacheFactory.create(KvScheme.BF16, t.attentionShape(), backend,
                    TOKENS.length + GREEDY)) {
                float[] last = t.forward(state, List.of(Transformer.Chunk.of(cache, TOKENS)));
                for (int i = 0; i < GREEDY; i++) {
                    greedy[i] = argmax(last, vocab);
                    last = t.forward(state, List.of(Transformer.Chunk.of(cache, new int[] {greedy[i]})));
                }
            }
            return new Run(logits, greedy);
        }
    }

    static int argmax(float[] v, int n) {
        int best = 0;
        for (int i = 1; i < n; i++) {
            if (v[i] > v[best]) {
                best = i;
            }
        }
        return best;
    }

    static float maxAbs(float[] v) {
        float m = 0;
        for (float x : v) {
            m = Math.max(m, Math.abs(x));
        }
        return m;
    }

    /** Max |MLX - CPU| over all teacher-forced logits; checks the greedy tokens too when {@code sameGreedy}. */
    static float compare(String what, Run onCpu, Run onMlx) {
        float d = QuantizedModels.maxAbsDiff(onCpu.logits(), onMlx.logits(), onCpu.logits().length);
        System.out.printf("%s: max |MLX - CPU| over %d logits = %.3g (%.3g of max |logit| %.2f); greedy %d/%d equal%n",
                what, onCpu.logits().length, d, d / maxAbs(onCpu.logits()), maxAbs(onCpu.logits()),
                agreeing(onCpu.greedy(), onMlx.greedy()), GREEDY);
        return d;
    }

    static int agreeing(int[] a, int[] b) {
        int n = 0;
        while (n < a.length && a[n] == b[n]) {
            n++;
        }
        return n;
    }

    @ParameterizedTest
    @ValueSource(ints = {4, 8})
    void float32LogitsWithin1e3AndTheSameGreedyTokensAsTheCpuBackend(int bits) throws Exception {
        Path q = plain(bits);
        Run onCpu = run(q, cpu);
        Run onMlx = run(q, float32);
        assertThat(compare(bits + "-bit, float32", onCpu, onMlx)).isLessThanOrEqualTo(1e-3f);
        assertThat(onMlx.greedy()).containsExactly(onCpu.greedy());
    }

    @Test
    void perLayerOverrideAndDenseLmHeadRunOnMlx() throws Exception {
        // as QuantizedModelTest: rotated (untied LM head), lm_head kept dense, layer 1's down_proj at 8 bits, the rest
        // at 4 bits in groups of 32
        Path q = quantized("mixed", new WeightQuantizer.Options(4, 32, Pattern.compile("^lm_head$"), true, 7, null,
                Map.of(Pattern.compile("layers\\.1\\.mlp\\.down_proj"), 8)));
        Run onCpu = run(q, cpu);
        Run onMlx = run(q, float32);
        assertThat(compare("4-bit g32 + 8-bit override + dense lm_head, float32", onCpu, onMlx))
                .isLessThanOrEqualTo(1e-3f);
        assertThat(onMlx.greedy()).containsExactly(onCpu.greedy());
    }

    /**
     * native: activations and matmul outputs in bf16 (the scales' dtype), as mlx-lm runs, against the CPU backend's
     * float32. Measured on MLX's CPU device on x86_64: max |diff| 1.76 = 0.107 of max |logit|, the first 4 greedy
     * tokens equal. Most of it is MLX's CPU kernel, not tqserve: without SIMD types for bf16 (x86_64)
     * {@code quantized_matmul} falls back to a loop that accumulates the dot product in bf16 (one product of a
     * 1408-wide row: error 0.28 against 0.02 for a dense bf16 matmul of the dequantized matrix); Metal and Apple's
     * CPU SIMD path accumulate in float32. The bound catches a wrong op (which moves logits by their whole scale).
     */
    @Test
    void nativeDtypeStaysCloseToTheCpuBackend() throws Exception {
        Path q = plain(4);
        Run onCpu = run(q, cpu);
        Run onMlx = run(q, nativeDtype);
        float d = compare("4-bit, native (bf16)", onCpu, onMlx);
        assertThat(d).isLessThanOrEqualTo(0.2f * maxAbs(onCpu.logits()));
        assertThat(onMlx.greedy()[0]).isEqualTo(onCpu.greedy()[0]);
    }

    @Test
    void deviceMemoryAfterLoadIsTheQuantizedTensorBytes() throws Exception {
        Path q = plain(4);
        long tensorBytes;
        long dense;
        try (Safetensors st = Safetensors.open(q)) {
            tensorBytes = st.tensors().values().stream().mapToLong(t -> t.data().byteSize()).sum();
        }
        try (Safetensors st = Safetensors.open(TINY)) {
            dense = st.tensors().values().stream().mapToLong(t -> t.data().byteSize()).sum();
        }
        runtime.clearCache();
        long before = runtime.activeMemory();
        long loaded;
        try (Model m = Model.load(q, nativeDtype)) {
            runtime.clearCache();
            loaded = runtime.activeMemory() - before;
        }
        System.out.printf("4-bit model on MLX (native): device memory after load %d B, quantized tensors %d B, dense "
                + "bf16 tensors %d B%n", loaded, tensorBytes, dense);
        // the words, scales and biases as stored, plus the RoPE periods (headDim/2 floats); no dense copy
        assertThat(loaded).isBetween(tensorBytes, tensorBytes + 4096);
        assertThat(loaded).isLessThan(dense / 3);
    }

    @Test
    void autoSelectsMlxForAQuantizedModel() throws Exception {
        Path q = plain(8);
        BackendSelector.Selection s = BackendSelector.select("auto", 1, System.getProperty("tqserve.backend.mlx.library"),
                MlxOptions.DEFAULTS.withDtype(MlxOptions.Dtype.FLOAT32));
        try (ComputeBackend b = s.backend(); Model m = Model.load(q, b)) {
            assertThat(b.name()).isEqualTo("mlx");
            assertThat(m.transformer().deviceDescription()).startsWith("MLX decoder");
        }
    }
}
