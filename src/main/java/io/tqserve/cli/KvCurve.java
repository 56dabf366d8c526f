package io.tqserve.cli;

import io.tqserve.kv.AttentionShape;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import io.tqserve.kv.turbo.AttentionPath;
import io.tqserve.kv.turbo.DeviceTurboKvCache;
import io.tqserve.kv.turbo.TurboQuantKvCache;
import io.tqserve.model.ForwardState;
import io.tqserve.model.Transformer;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

/**
 * The teacher-forced KV quality protocol of {@code eval kv-curve}. For every prompt (P prompt tokens followed by D
 * continuation tokens x_0 … x_{D−1}) and every arm (KV scheme):
 * <ol>
 *   <li>prefill the P prompt tokens into a fresh cache of the arm (attention in full precision, K/V then stored in
 *       the arm's format): distribution π_{−1} over the next token;</li>
 *   <li>decode step i (i = 0 … D−1) feeds x_i, appending its K/V in the arm's format and attending over the whole
 *       stored cache (float32 accumulation): distribution π_i.</li>
 * </ol>
 * The control arm is bf16 (K/V rounded to bfloat16). Per arm:
 * <ul>
 *   <li>mean KL = mean over all prompts and i = 0 … D−1 of KL(π_i^bf16 ‖ π_i^arm) (natural log, from the float32
 *       logits through a float64 log-softmax);</li>
 *   <li>top-1 agreement = fraction of those D·prompts distributions whose argmax equals the control's (lowest id on
 *       ties);</li>
 *   <li>perplexity = exp(mean over all prompts and i = 0 … D−1 of −log π_{i−1}^arm(x_i)): each continuation token
 *       scored by the distribution before it was fed (the prefill's for x_0);</li>
 *   <li>effective bits per KV element from {@code KvLayout} (stored bytes per token and head × 8 / (2·headDim)).</li>
 * </ul>
 */
public final class KvCurve {
    /** One line of the curve. */
    record Row(String scheme, double effectiveBits, double compression, double meanKl, double perplexity,
            double top1Agreement) {
    }

    private final Transformer t;
    private final int promptTokens;
    private final int decodeSteps;
    private final AttentionPath turboPath;
    private final PrintStream progress;

    KvCurve(Transformer t, int promptTokens, int decodeSteps, AttentionPath turboPath, PrintStream progress) {
        this.t = t;
        this.promptTokens = promptTokens;
        this.decodeSteps = decodeSteps;
        this.turboPath = turboPath;
        this.progress = progress;
    }

    /** Receives the logits of the distribution with index i (−1 = the prefill's). */
    private interface Sink {
        void accept(int i, float[] logits);
    }

    /**
     * One arm: a forward (its weights) and a KV scheme, under a label.
     *
     * @param model the transformer the arm runs (a quantized copy of the weights, or the control's)
     */
    record Arm(String label, Transformer model, KvScheme scheme) {
    }

    /** Runs every scheme (bf16 is the control and always runs first) over the prompts (each ≥ P + D tokens). */
    List<Row> run(List<KvScheme> schemes, List<int[]> prompts) {
        List<Arm> arms = new ArrayList<>();
        arms.add(new Arm(KvScheme.BF16.id(), t, KvScheme.BF16));
        for (KvScheme s : schemes) {
            if (!(s instanceof KvScheme.Bf16)) {
                arms.add(new Arm(s.id(), t, s));
            }
        }
        List<Row> rows = runArms(arms, prompts);
        List<Row> ordered = new ArrayList<>();
        for (KvScheme s : schemes) { // the caller's order; bf16 only when asked for
            for (Row r : rows) {
                if (r.scheme().equals(s.id())) {
                    ordered.add(r);
                }
            }
        }
        return ordered;
    }

    /**
     * Runs the arms over the prompts; the first arm is the control the KL and top-1 agreement are measured
     * against (its own row has KL 0). Rows in arm order.
     */
    List<Row> runArms(List<Arm> arms, List<int[]> prompts) {
        int vocab = t.config().vocabSize();
        int n = prompts.size();
        long start = System.nanoTime();
        // control distributions: (prompts, D, vocab) log-probabilities in float64 would be 8 MB per prompt: keep
        // float32 logits and recompute the control's log-softmax per step
        float[][][] control = new float[n][decodeSteps][];
        List<Row> rows = new ArrayList<>();
        for (int a = 0; a < arms.size(); a++) {
            Arm arm = arms.get(a);
            KvScheme scheme = arm.scheme();
            double[] acc = new double[4]; // sum KL, top-1 matches, sum NLL, count
            for (int p = 0; p < n; p++) {
                progress.printf("kv-curve: [%d/%d] %s, prompt %d/%d (%.0f s)%n", a + 1, arms.size(), arm.label(), p + 1,
                        n, (System.nanoTime() - start) / 1e9);
                int[] tokens = prompts.get(p);
                float[][] ctl = control[p];
                boolean isControl = a == 0;
                runArm(arm, tokens, (i, logits) -> {
                    double[] lp = logSoftmax(logits);
                    if (i + 1 < decodeSteps) { // predicts x_{i+1}
                        acc[2] -= lp[tokens[promptTokens + i + 1]];
                    }
                    if (i < 0) {
                        return;
                    }
                    if (isControl) {
                        ctl[i] = logits.clone();
                    }
                    double[] lc = logSoftmax(ctl[i]);
                    double kl = 0;
                    for (int v = 0; v < vocab; v++) {
                        kl += Math.exp(lc[v]) * (lc[v] - lp[v]);
                    }
                    acc[0] += kl;
                    acc[1] += argmax(lc) == argmax(lp) ? 1 : 0;
                    acc[3]++;
                });
            }
            AttentionShape shape = t.attentionShape();
            rows.add(new Row(arm.label(), shape.layout(scheme).effectiveBits(), shape.layout(scheme).compressionRatio(),
                    acc[0] / acc[3], Math.exp(acc[2] / acc[3]), acc[1] / acc[3]));
        }
        progress.printf("kv-curve: done in %.0f s%n", (System.nanoTime() - start) / 1e9);
        return rows;
    }

    /** Prefill, then D teacher-forced decode steps; the sink sees the prefill's logits (i = −1) and step i's. */
    private void runArm(Arm arm, int[] tokens, Sink sink) {
        Transformer t = arm.model();
        KvScheme scheme = arm.scheme();
        ForwardState state = new ForwardState(t.config());
        int vocab = t.config().vocabSize();
        int max = promptTokens + decodeSteps;
        try (KvCache cache = scheme instanceof KvScheme.Turbo turbo // on the device where the backend has one
                ? DeviceTurboKvCache.create(turbo, t.attentionShape(), t.backend(), max, 0).<KvCache>map(d -> d)
                        .orElseGet(() -> new TurboQuantKvCache(turbo, t.attentionShape(), t.backend(), max, 0, turboPath))
                : KvCacheFactory.create(scheme, t.attentionShape(), t.backend(), max)) {
            float[] logits = t.forward(state, List.of(new Transformer.Chunk(cache, tokens, 0, promptTokens, false)));
            sink.accept(-1, java.util.Arrays.copyOf(logits, vocab));
            for (int i = 0; i < decodeSteps; i++) {
                logits = t.forward(state, List.of(new Transformer.Chunk(cache, tokens, promptTokens + i, 1, false)));
                sink.accept(i, java.util.Arrays.copyOf(logits, vocab));
            }
        }
    }

    /** log-softmax in float64 (also the KL of the MLX native-mode tests). */
    public static double[] logSoftmax(float[] logits) {
        double max = Double.NEGATIVE_INFINITY;
        for (float l : logits) {
            max = Math.max(max, l);
        }
        double sum = 0;
        for (float l : logits) {
            sum += Math.exp(l - max);
        }
        double lse = max + Math.log(sum);
        double[] out = new double[logits.length];
        for (int i = 0; i < logits.length; i++) {
            out[i] = logits[i] - lse;
        }
        return out;
    }

    public static int argmax(double[] x) {
        int best = 0;
        for (int i = 1; i < x.length; i++) {
            if (x[i] > x[best]) {
                best = i;
            }
        }
        return best;
    }
}
