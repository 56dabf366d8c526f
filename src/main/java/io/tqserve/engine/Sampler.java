package io.tqserve.engine;

import io.tqserve.constraint.ConstraintState;
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
    private float[] lastLogits;         // the raw logits of the current draw (argmax fallback)
    private int lastOff;

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
        return sample(logits, off, null, 0);
    }

    /**
     * As {@link #sample(float[], int)}, with the constraint's mask applied after penalties and logit bias (so they
     * can reorder the allowed tokens but never bring back a forbidden one).
     *
     * @param constraint the sequence's constraint, or null
     * @param remaining  tokens that may still be generated, this one included
     */
    public int sample(float[] logits, int off, ConstraintState constraint, int remaining) {
        float[] x = work;
        lastLogits = logits;
        lastOff = off;
        System.arraycopy(logits, off, x, 0, vocab);
        applyPenalties(x);
        for (Map.Entry<Integer, Float> e : p.logitBias().entrySet()) {
            int id = e.getKey();
            if (id >= 0 && id < vocab) {
                x[id] += e.getValue();
            }
        }
        if (constraint != null) {
            constraint.mask(x, remaining);
            if (!p.greedyDecoding()) {
                return sampleProcessed(x, x); // all masked cannot happen: the mask keeps a token
            }
        }
        if (p.greedyDecoding()) {
            return argmax(x);
        }
        return sampleProcessed(x, null);
    }

    /** Temperature, softmax and the draw over processed logits; {@code fallback} (or the raw logits) for argmax. */
    private int sampleProcessed(float[] x, float[] fallback) {
        float invT = 1f / p.temperature();
        float max = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < vocab; i++) {
            x[i] *= invT;
            max = Math.max(max, x[i]);
        }
        if (max == Float.NEGATIVE_INFINITY || Float.isNaN(max)) {
            return fallback != null ? argmax(fallback) : argmax(lastLogits, lastOff);
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

    /**
     * Sorted candidate set after top-k, top-p and min-p, then one draw. The walk below visits the most likely tokens
     * in order until top-k, min-p or top-p stops it; it only ever reaches a prefix of the order by probability. So
     * instead of sorting the whole vocabulary (which costs more than the softmax), only the tokens with a probability
     * of at least {@code tau} are sorted, with tau lowered until that set surely holds the walked prefix: at least {@code keep} tokens, or tau at or below the min-p cutoff, or a mass beyond
     * top-p (with a margin far above the rounding of the sums). Tokens of equal probability are ordered by id in both,
     * so the candidates, their order and the draw are the same as with a full sort.
     */
    private int samplePruned(float[] probs) {
        boolean prune = p.topK() > 0 || p.topP() < 1f || p.minP() > 0f;
        if (!prune) {
            return draw(probs);
        }
        if (order == null) {
            order = new long[vocab];
        }
        return pruned(probs, vocab, p, random.nextDouble(), order);
    }

    /**
     * The pruned draw for probabilities probs[0, vocab) and a uniform number u in [0, 1), with {@code order} (vocab
     * long) as scratch: a pure function, so tests can hold it against a full sort.
     */
    static int pruned(float[] probs, int vocab, SamplingParams p, double uniform, long[] order) {
        int keep = p.topK() > 0 ? Math.min(p.topK(), vocab) : vocab;
        float top = 0f;
        for (int i = 0; i < vocab; i++) {
            top = Math.max(top, probs[i]);
        }
        float minPCut = p.minP() * top;
        float tau = top;
        while (true) {
            int m = 0;
            double mass = 0;
            for (int i = 0; i < vocab; i++) {
                if (probs[i] >= tau) {
                    m++;
                    mass += probs[i];
                }
            }
            if (tau == 0f || m >= keep || (p.minP() > 0f && tau <= minPCut) || mass >= p.topP() + 1e-4) {
                break;
            }
            tau = tau < Float.MIN_NORMAL ? 0f : tau * 0.125f;
        }
        int m = 0;
        for (int i = 0; i < vocab; i++) {
            if (probs[i] >= tau && probs[i] > 0f) { // a token of probability 0 (masked) is never a candidate
                // descending by probability: sort ascending on the negated (non-negative) float bits
                order[m++] = ((long) (~Float.floatToIntBits(probs[i]) & 0x7FFFFFFF) << 32) | i;
            }
        }
        Arrays.sort(order, 0, m);
        int limit = Math.min(keep, m);
        float first = probs[(int) order[0]];
        double cum = 0;
        int n = 0;
        for (; n < limit; n++) {
            float pr = probs[(int) order[n]];
            if (n > 0 && p.minP() > 0f && pr < p.minP() * first) {
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
        double u = uniform * total;
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
