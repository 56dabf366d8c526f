package io.tqserve.cli;

import io.tqserve.backend.ComputeBackend;
import io.tqserve.backend.DeviceSampler;
import io.tqserve.backend.SamplingSpec;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.ForwardState;
import io.tqserve.model.ModelConfig;
import io.tqserve.model.ModelWeights;
import io.tqserve.model.QuantizationConfig;
import io.tqserve.model.Safetensors;
import io.tqserve.model.Transformer;
import io.tqserve.model.quantize.WeightQuantizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code bench decode --weights bf16,8,4}: decode tok/s of the model as stored and of copies quantized to each width
 * (MLX affine, group 64, written to temp folders with the quantize verb's code and deleted afterwards), measured
 * interleaved: every arm is loaded at once, and each round decodes the same prompt on every arm in turn, the order
 * rotating from round to round. A machine whose load drifts during the run (a shared one) then slows every arm
 * alike, where arms run one after the other would each see a different machine. Per arm it prints the weight bytes
 * a decode step reads, decode tok/s over all rounds, the fraction of the memory-bandwidth roofline (weight bytes per
 * token × tok/s ÷ the read bandwidth measured at the start) and the ratio to the first arm, with the per-round
 * ratios beside it.
 */
final class WeightsDecodeComparison {
    static final int ROUNDS = 4;

    private WeightsDecodeComparison() {
    }

    /** One weight format, loaded. */
    private record Arm(String name, Safetensors st, Transformer transformer, long bytesPerToken) {
    }

    static void run(String label, Path dir, List<Integer> weights, ComputeBackend backend, int promptTokens,
            int decodeTokens, double readGbs) throws Exception {
        List<Arm> arms = new ArrayList<>();
        List<Path> temps = new ArrayList<>();
        try {
            ModelConfig c = ModelConfig.load(dir);
            for (int bits : weights) {
                Path src = dir;
                if (bits != 0) {
                    src = Files.createTempDirectory("tqserve-bench-q" + bits);
                    temps.add(src);
                    System.err.println("quantizing to " + bits + " bits ...");
                    WeightQuantizer.run(dir, src, new WeightQuantizer.Options(bits, 64, null, false, 0, null), null);
                }
                Safetensors st = Safetensors.open(src);
                ModelWeights w = ModelWeights.load(st, c, QuantizationConfig.load(src));
                Path s = src;
                arms.add(new Arm(bits == 0 ? denseName(c) : "q" + bits, st,
                        new Transformer(c, w, backend, st.headers().keySet().stream().map(s::resolve).toList()),
                        DecodeBenchmark.weightBytesPerToken(w)));
            }
            int[] prompt = DecodeBenchmark.prompt(c, promptTokens);
            long[] nanos = new long[arms.size()];
            double[][] roundRates = new double[ROUNDS][arms.size()];
            for (Arm arm : arms) { // warm-up: JIT-compile every arm's kernels before anything is timed
                decode(arm.transformer(), c, backend, prompt, decodeTokens);
            }
            for (int round = 0; round < ROUNDS; round++) {
                for (int k = 0; k < arms.size(); k++) {
                    int i = (round + k) % arms.size();
                    long t = decode(arms.get(i).transformer(), c, backend, prompt, decodeTokens);
                    nanos[i] += t;
                    roundRates[round][i] = decodeTokens / (t / 1e9);
                }
            }
            System.out.printf("%s, weight formats interleaved (%d rounds of %d decode tokens after a %d-token prompt,"
                    + " bf16 KV; order rotating per round):%n", label, ROUNDS, decodeTokens, promptTokens);
            System.out.println("  weights   MB/token   decode tok/s   roofline   vs " + arms.get(0).name()
                    + "   per round");
            double base = ROUNDS * decodeTokens / (nanos[0] / 1e9);
            StringBuilder summary = new StringBuilder("decode tok/s as a ratio to " + arms.get(0).name() + ":");
            for (int i = 0; i < arms.size(); i++) {
                Arm arm = arms.get(i);
                double rate = ROUNDS * decodeTokens / (nanos[i] / 1e9);
                StringBuilder per = new StringBuilder();
                for (double[] r : roundRates) {
                    per.append(String.format(" %.2f", r[i] / r[0]));
                }
                System.out.printf("  %-7s %10.1f %14.2f %10.2f %6.2fx  %s%n", arm.name(), arm.bytesPerToken() / 1e6,
                        rate, arm.bytesPerToken() * rate / (readGbs * 1e9), rate / base, per.toString().strip());
                if (i > 0) {
                    summary.append(String.format(" %s %.2fx", arm.name(), rate / base));
                }
            }
            System.out.println(summary);
        } finally {
            for (Arm arm : arms) {
                arm.st().close();
            }
            for (Path t : temps) {
                SyntheticModel.deleteTree(t);
            }
        }
    }

    /** The dense arm's name: its declared dtype. */
    private static String denseName(ModelConfig c) {
        return switch (c.dtype() == null ? "" : c.dtype()) {
            case "bfloat16" -> "bf16";
            case "float16" -> "f16";
            case "float32" -> "f32";
            default -> "dense";
        };
    }

    /** Prefills the prompt into a fresh bf16 cache (not timed), then decodes; returns the decode nanoseconds. */
    private static long decode(Transformer t, ModelConfig c, ComputeBackend backend, int[] prompt, int decodeTokens)
            throws Exception {
        ForwardState state = new ForwardState(c);
        try (KvCache cache = KvCacheFactory.create(KvScheme.BF16, t.attentionShape(), backend,
                prompt.length + decodeTokens);
                DeviceSampler sampler = t.runsOnDevice(cache) ? t.deviceSampler(new SamplingSpec(0f, 0, 1f, 0f, 0L,
                        1f, 0f, 0f, java.util.Map.of(), -1, prompt)).orElseThrow() : null) {
            t.forward(state, List.of(Transformer.Chunk.of(cache, prompt)));
            int[] one = {prompt[0]};
            long t0 = System.nanoTime();
            for (int i = 0; i < decodeTokens; i++) {
                t.forward(state, List.of(sampler == null ? Transformer.Chunk.of(cache, one)
                        : Transformer.Chunk.sampled(cache, one[0], sampler)));
            }
            return System.nanoTime() - t0;
        }
    }
}
