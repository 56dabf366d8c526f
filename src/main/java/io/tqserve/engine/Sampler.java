package io.tqserve.engine;

import java.util.Arrays;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Turns logits into a token for one sequence: penalties, logit bias, then greedy or temperature + top-k +
 * top-p + min-p sampling with the sequence's own seeded generator (same seed, same output). Holds the token
 * counts the penalties need; one instance per sequence, not thread-safe.
 */
public final class Sampler {
    private final SamplingParams p;
    private final int vocab;
    private final SplittableRandom random;
    private final int[] outputCounts;   // (vocab) occurrences in the output
    private final boolean[] seen;       // (vocab) in prompt or output, for the repetition penalty
    private final float[] work;         // (vocab) processed logits
    private long[] order;               // (vocab) sort keys for top-k / top-p

    public Sampler(SamplingParams params, int vocabSize, int[] promptTokens) {
        this.p = params;
        this.vocab = vocabSize;
        this.random = params.seed() != null ? new SplittableRandom(params.seed()) : new SplittableRandom();
        this.outputCounts = new int[vocabSize];
        this.seen = new boolean[vocabSize];
        this.work = new float[vocabSize];
        for (int t : promptTokens) {
            if (t >= 0 && t < vocabSize) {
                seen[t] = true;
            }
        }
    }

    public int vocab() {
        return vocab;
    }

    /** Records a generated token for the penalties. */
    public void accept(int token) {
        outputCounts[token]++;
        seen[token] = true;
    }

    /** Picks the next token from logits[off, off+vocab) (which are not modified). */
    public int sample(float[] logits, int off) {
        float[] x = work;
        System.arraycopy(logits, off, x, 0, vocab);
        applyPenalties(x);
        for (Map.Entry<Integer, Float> e : p.logitBias().entrySet()) {
            int id = e.getKey();
            if (id >= 0 && id < vocab) {
                x[id] += e.getValue();
            }
        }
        if (p.greedyDecoding()) {
            return argmax(x);
        }
        float invT = 1f / p.temperature();
        float max = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < vocab; i++) {
            x[i] *= invT;
            max = Math.max(max, x[i]);
        }
        if (max == Float.NEGATIVE_INFINITY || Float.isNaN(max)) {
            return argmax(logits, off);
        }
        double sum = 0;
        for (int i = 0; i < vocab; i++) {
            float e = (float) Math.exp(x[i] - max);
            x[i] = e;
            sum += e;
        }
        for (int i = 0; i < vocab; i++) {
            x[i] = (float) (x[i] / sum);
        }
        return samplePruned(x);
    }

    private void applyPenalties(float[] x) {
        float rep = p.repetitionPenalty();
        boolean openAi = p.presencePenalty() != 0f || p.frequencyPenalty() != 0f;
        if (rep == 1f && !openAi) {
            return;
        }
        for (int i = 0; i < vocab; i++) {
            if (rep != 1f && seen[i]) {
                x[i] = x[i] > 0 ? x[i] / rep : x[i] * rep;
            }
            if (openAi && outputCounts[i] > 0) {
                x[i] -= p.presencePenalty() + p.frequencyPenalty() * outputCounts[i];
            }
        }
    }

    /** Sorted candidate set after top-k, top-p and min-p, then one draw. */
    private int samplePruned(float[] probs) {
        boolean prune = p.topK() > 0 || p.topP() < 1f || p.minP() > 0f;
        if (!prune) {
            return draw(probs);
        }
        if (order == null) {
            order = new long[vocab];
        }
        for (int i = 0; i < vocab; i++) {
            // descending by probability: sort ascending on the negated (non-negative) float bits
            order[i] = ((long) (~Float.floatToIntBits(probs[i]) & 0x7FFFFFFF) << 32) | i;
        }
        Arrays.sort(order);
        int keep = p.topK() > 0 ? Math.min(p.topK(), vocab) : vocab;
        float top = probs[(int) order[0]];
        double cum = 0;
        int n = 0;
        for (; n < keep; n++) {
            float pr = probs[(int) order[n]];
            if (n > 0 && p.minP() > 0f && pr < p.minP() * top) {
                break;
            }
            cum += pr;
            if (cum >= p.topP()) {
                n++;
                break;
            }
        }
        double total = 0;
        for (int i = 0; i < n; i++) {
            total += probs[(int) order[i]];
        }
        double u = random.nextDouble() * total;
        for (int i = 0; i < n; i++) {
            u -= probs[(int) order[i]];
            if (u <= 0) {
                return (int) order[i];
            }
        }
        return (int) order[n - 1];
    }

    private int draw(float[] probs) {
        double u = random.nextDouble();
        int last = 0;
        for (int i = 0; i < vocab; i++) {
            if (probs[i] > 0) {
                last = i;
                u -= probs[i];
                if (u <= 0) {
                    return i;
                }
            }
        }
        return last;
    }

    private int argmax(float[] x) {
        return argmax(x, 0);
    }

    private int argmax(float[] x, int off) {
        int best = 0;
        for (int i = 1; i < vocab; i++) {
            if (x[off + i] > x[off + best]) {
                best = i;
            }
        }
        return best;
    }
}
