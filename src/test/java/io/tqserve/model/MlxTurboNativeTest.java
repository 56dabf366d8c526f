package io.tqserve.model;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.backend.mlx.MlxBackend;
import io.tqserve.backend.mlx.MlxOptions;
import io.tqserve.backend.mlx.MlxTestLibrary;
import io.tqserve.cli.KvCurve;
import io.tqserve.kv.Bf16Codec;
import io.tqserve.kv.ForwardingKvCache;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import io.tqserve.kv.turbo.AttentionPath;
import io.tqserve.kv.turbo.TurboQuantKvCache;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The turbo lane on the MLX device in {@code native} mode (bf16 activations) against {@code float32} mode, on
 * tiny-llama-h128 and the five reference prompts.
 *
 * <p>A quantizer turns a small perturbation of its input into whole code steps wherever a value sits near a
 * decision boundary: rounding float32 K/V rows to bf16 changes about 0.3 % of the 3-bit value codes of the reference
 * prompts' prefills (each moving a rotated value by about half its group's RMS) and one 8-bit key code in seven (by
 * one step). So in native mode the decoder projects the K/V rows that a TurboQuant cache encodes from the float32
 * normed residual ({@code MlxDecoder.encodesKv}); only the rest of native mode's bf16 roundings remain. The check,
 * teacher-forced on float32 mode's own greedy continuations: native mode's KL from float32 mode is at most 0.75 ×
 * that of the float32 forward whose only change is that its stored K/V are rounded to bf16 (measured: 0.0099 vs
 * 0.0189, top-1 agreement 0.936 vs 0.916; before K/V were projected in float32 native mode gave 0.0214, i.e. it
 * rounded them). A rounding or scaling defect inside the device turbo path (queries, scores, softmax, the
 * rotated-domain sum, the inverse Hadamard) would add error on top. Greedy continuations still part: this model
 * often chooses between logits closer than the remaining bf16 noise (k8v3's top-1 agreement with bf16 is 81 %), and
 * native equals float32 over 32 greedy tokens on 1 of the 5 prompts (first differing steps 5, none, 20, 8, 2), where
 * the bf16 cache keeps all 5 (third check). A
 * second check decomposes native mode's KL for turbo:k8v8 (see its method). Skipped, with the places searched, when
 * libmlxc is absent.
 */
@Tag("mlx")
class MlxTurboNativeTest {
    static final Path DIR = Path.of("models/tiny-llama-h128");
    static final int STEPS = 32;
    static ModelConfig config;
    static CpuBackend cpu;
    static MlxBackend nativeMlx;
    static MlxBackend float32Mlx;
    static Safetensors st;
    static Transformer onCpu;
    static Transformer onNative;
    static Transformer onFloat32;

    @BeforeEach
    void load() throws Exception {
        var runtime = MlxTestLibrary.open();
        if (nativeMlx != null) {
            return;
        }
        config = ModelConfig.load(DIR);
        cpu = CpuBackend.create(2);
        nativeMlx = new MlxBackend(runtime, CpuBackend.create(1), MlxOptions.DEFAULTS);
        float32Mlx = new MlxBackend(runtime, CpuBackend.create(1), MlxOptions.DEFAULTS.withDtype(MlxOptions.Dtype.FLOAT32));
        st = Safetensors.open(DIR);
        onCpu = new Transformer(config, ModelWeights.load(st, config), cpu);
        onNative = MlxForwardParityTest.onDevice(DIR, config, st, nativeMlx);
        onFloat32 = MlxForwardParityTest.onDevice(DIR, config, st, float32Mlx);
    }

    @AfterAll
    static void close() {
        if (nativeMlx != null) {
            onNative.close();
            onFloat32.close();
            st.close();
            nativeMlx.close();
            float32Mlx.close();
            cpu.close();
            nativeMlx = null;
        }
    }

    @Test
    void nativeModeDepartsFromFloat32ModeLessThanBf16RoundedKvDoes() throws Exception {
        String scheme = "turbo:k8v3";
        Divergence nativeMode = new Divergence();
        Divergence roundedKv = new Divergence();
        for (ReferenceOutputs.Prompt p : ReferenceOutputs.load(DIR).prompts()) {
            int[] prompt = p.inputIds();
            int[] tokens = new int[STEPS];
            Arrays.fill(tokens, -1); // float32 mode's greedy continuation
            float[][] float32 = forced(onFloat32, deviceCache(onFloat32, float32Mlx, scheme), prompt, tokens);
            nativeMode.add(float32, forced(onNative, deviceCache(onNative, nativeMlx, scheme), prompt, tokens));
            KvCache java = new TurboQuantKvCache((KvScheme.Turbo) KvScheme.parse(scheme), onCpu.attentionShape(), cpu,
                    config.maxPositions(), 0, AttentionPath.FUSED);
            roundedKv.add(float32, forced(onCpu, new Bf16Rounded(java), prompt, tokens));
        }
        System.out.printf("%s vs float32 mode, teacher-forced: native KL %.5f top-1 %.4f; bf16-rounded K/V KL %.5f "
                + "top-1 %.4f%n", scheme, nativeMode.meanKl(), nativeMode.top1(), roundedKv.meanKl(), roundedKv.top1());
        assertTrue(nativeMode.meanKl() <= 0.75 * roundedKv.meanKl(), "native mode's mean KL from float32 mode "
                + nativeMode.meanKl() + " vs " + roundedKv.meanKl() + " from rounding the stored K/V to bf16: "
                + "does native mode round the K/V it encodes?");
        assertTrue(nativeMode.top1() >= roundedKv.top1(), "native top-1 agreement " + nativeMode.top1()
                + " vs " + roundedKv.top1() + " from rounding the stored K/V to bf16");
    }

    /**
     * Why {@code eval kv-curve}'s native-mode KL for turbo:k8v8 is about twice the CPU's (docs/quality.md): in
     * native mode two arms whose K/V differ at all round different numbers to bf16 in every later layer, so their
     * difference carries native mode's own rounding noise besides the quantization's. Teacher-forced on float32
     * mode's bf16-cache greedy continuations: KL(bf16 ‖ k8v8) in native mode is the float32 mode's plus
     * KL(float32 ‖ native) of the bf16 cache (measured 0.00085 vs 0.00039 + 0.00030; the turbo arm now encodes
     * float32 K/V projections while the bf16 control stores bf16 ones, which adds a little). Error the device turbo path
     * added in native mode would show on top.
     */
    @Test
    void eightBitKlInNativeModeIsTheQuantizationKlPlusNativeRoundingNoise() throws Exception {
        Divergence float32Kl = new Divergence();
        Divergence nativeKl = new Divergence();
        Divergence rounding = new Divergence();
        for (ReferenceOutputs.Prompt p : ReferenceOutputs.load(DIR).prompts()) {
            int[] prompt = p.inputIds();
            int[] tokens = new int[STEPS];
            Arrays.fill(tokens, -1);
            float[][] float32Bf16 = forced(onFloat32, deviceCache(onFloat32, float32Mlx, "bf16"), prompt, tokens);
            float[][] nativeBf16 = forced(onNative, deviceCache(onNative, nativeMlx, "bf16"), prompt, tokens);
            float32Kl.add(float32Bf16, forced(onFloat32, deviceCache(onFloat32, float32Mlx, "turbo:k8v8"), prompt, tokens));
            nativeKl.add(nativeBf16, forced(onNative, deviceCache(onNative, nativeMlx, "turbo:k8v8"), prompt, tokens));
            rounding.add(float32Bf16, nativeBf16);
        }
        System.out.printf("KL(bf16 || turbo:k8v8): float32 mode %.6f, native mode %.6f; KL(float32 || native), bf16 "
                + "cache: %.6f%n", float32Kl.meanKl(), nativeKl.meanKl(), rounding.meanKl());
        double expected = float32Kl.meanKl() + rounding.meanKl();
        assertTrue(nativeKl.meanKl() <= 1.35 * expected && nativeKl.meanKl() >= 0.75 * expected, "native KL "
                + nativeKl.meanKl() + " vs float32 KL + native rounding noise " + expected);
    }

    /**
     * Where native mode's greedy tokens part from float32 mode's: on the bf16 cache they do not (all 5 prompts
     * equal over 32 tokens, teacher-forced top-1 agreement 1.0, KL 0.0003: native mode's bf16 activations alone do
     * not move this model's greedy choices), on TurboQuant caches they do, the more the coarser the quantizer
     * (measured: turbo:k8v8 3 of 5, KL 0.0005, top-1 0.981; turbo:k8v3 1 of 5, KL 0.0099, top-1 0.935). The
     * quantizers turn native mode's small differences in the K/V they encode (the residual stream carries the earlier
     * layers' bf16 roundings into the float32 K/V projections) into whole code steps at decision boundaries.
     */
    @Test
    void nativeGreedyTokensEqualFloat32ModesOnTheBf16CacheAndFinerTurboCodesPartLess() throws Exception {
        List<ReferenceOutputs.Prompt> prompts = ReferenceOutputs.load(DIR).prompts();
        int[] bf16 = greedyAgreement("bf16", prompts);
        assertTrue(bf16[0] == 5 && bf16[1] == bf16[2], "native mode's greedy tokens on the bf16 cache equal "
                + "float32 mode's on " + bf16[0] + " of 5 prompts, teacher-forced top-1 " + bf16[1] + "/" + bf16[2]);
        int[] k8v8 = greedyAgreement("turbo:k8v8", prompts);
        int[] k8v3 = greedyAgreement("turbo:k8v3", prompts);
        assertTrue(k8v8[1] >= k8v3[1], "finer codes part less: k8v8 top-1 " + k8v8[1] + " vs k8v3 " + k8v3[1]);
    }

    /** {prompts whose 32 greedy tokens equal float32 mode's, teacher-forced top-1 agreements, steps}. */
    private static int[] greedyAgreement(String scheme, List<ReferenceOutputs.Prompt> prompts) {
        int same = 0;
        Divergence forcedOnFloat32 = new Divergence();
        StringBuilder firsts = new StringBuilder();
        for (ReferenceOutputs.Prompt p : prompts) {
            int[] float32Tokens = new int[STEPS];
            int[] nativeTokens = new int[STEPS];
            Arrays.fill(float32Tokens, -1);
            Arrays.fill(nativeTokens, -1);
            float[][] reference = forced(onFloat32, deviceCache(onFloat32, float32Mlx, scheme), p.inputIds(),
                    float32Tokens);
            forced(onNative, deviceCache(onNative, nativeMlx, scheme), p.inputIds(), nativeTokens);
            forcedOnFloat32.add(reference, forced(onNative, deviceCache(onNative, nativeMlx, scheme), p.inputIds(),
                    float32Tokens.clone()));
            int first = Arrays.mismatch(float32Tokens, nativeTokens);
            same += first < 0 ? 1 : 0;
            firsts.append(first < 0 ? "none" : String.valueOf(first)).append(' ');
        }
        System.out.printf("%s: native greedy-32 equals float32 mode's on %d of 5 prompts (first differing steps %s); "
                + "teacher-forced KL %.6f, top-1 %.4f%n", scheme, same, firsts.toString().trim(),
                forcedOnFloat32.meanKl(), forcedOnFloat32.top1());
        return new int[] {same, forcedOnFloat32.agree, forcedOnFloat32.count};
    }

    static KvCache deviceCache(Transformer t, MlxBackend on, String scheme) {
        return KvCacheFactory.create(KvScheme.parse(scheme), t.attentionShape(), on, config.maxPositions(), 0);
    }

    /**
     * Logits (vocab) before each of tokens is fed, the first from the prompt's prefill; where tokens[i] is −1 it
     * becomes the argmax of those logits (greedy). Closes the cache.
     */
    static float[][] forced(Transformer t, KvCache cache, int[] prompt, int[] tokens) {
        try (cache) {
            ForwardState state = new ForwardState(config);
            float[][] out = new float[tokens.length][];
            float[] logits = t.forward(state, List.of(Transformer.Chunk.of(cache, prompt)));
            for (int i = 0; i < tokens.length; i++) {
                out[i] = Arrays.copyOf(logits, config.vocabSize());
                if (tokens[i] < 0) {
                    tokens[i] = ForwardParityTest.argmax(logits, 0, config.vocabSize());
                }
                logits = t.forward(state, List.of(Transformer.Chunk.of(cache, new int[] {tokens[i]})));
            }
            return out;
        }
    }

    /** Mean KL(reference ‖ other) (float64 log-softmax, natural log) and top-1 agreement over decode steps. */
    static final class Divergence {
        double kl;
        int agree;
        int count;

        void add(float[][] reference, float[][] other) {
            for (int i = 1; i < reference.length; i++) { // 0 is the prefill's, the same attention in every mode
                double[] p = KvCurve.logSoftmax(reference[i]);
                double[] q = KvCurve.logSoftmax(other[i]);
                for (int v = 0; v < p.length; v++) {
                    kl += Math.exp(p[v]) * (p[v] - q[v]);
                }
                agree += KvCurve.argmax(p) == KvCurve.argmax(q) ? 1 : 0;
                count++;
            }
        }

        double meanKl() {
            return kl / count;
        }

        double top1() {
            return (double) agree / count;
        }
    }

    /** A cache whose K/V rows are rounded to bf16 (round to nearest even) before the wrapped cache stores them. */
    static final class Bf16Rounded extends ForwardingKvCache {
        Bf16Rounded(KvCache main) {
            super(main);
        }

        @Override
        public void attend(int layer, int rowOffset, int rows, float[] q, float[] k, float[] v, float[] out) {
            int kvDim = main.shape().numKvHeads() * main.shape().headDim();
            main.attend(layer, rowOffset, rows, q, rounded(k, rowOffset * kvDim, rows * kvDim),
                    rounded(v, rowOffset * kvDim, rows * kvDim), out);
        }

        private static float[] rounded(float[] x, int from, int n) {
            float[] r = x.clone();
            for (int i = from; i < from + n; i++) {
                r[i] = Bf16Codec.fromBf16(Bf16Codec.toBf16(x[i]));
            }
            return r;
        }
    }
}
