package io.tqserve.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class SamplerTest {
    static final float[] LOGITS = {1f, 3f, 2f, 0.5f, -1f, 2.9f};

    static SamplingParams params(float t, int topK, float topP, float minP, Long seed, float rep, float pres,
            float freq, Map<Integer, Float> bias) {
        return new SamplingParams(t, topK, topP, minP, seed, rep, pres, freq, bias, 16, List.of(), false, -1);
    }

    static int[] draws(SamplingParams p, int n) {
        Sampler s = new Sampler(p, LOGITS.length, new int[0]);
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = s.sample(LOGITS, 0);
        }
        return out;
    }

    @Test
    void greedyPicksTheLargestLogit() {
        assertEquals(1, new Sampler(SamplingParams.greedy(4), LOGITS.length, new int[0]).sample(LOGITS, 0));
    }

    @Test
    void sameSeedSameTokensOtherSeedOtherTokens() {
        SamplingParams a = params(1f, 0, 1f, 0f, 7L, 1f, 0f, 0f, Map.of());
        SamplingParams b = params(1f, 0, 1f, 0f, 8L, 1f, 0f, 0f, Map.of());
        assertArrayEquals(draws(a, 200), draws(a, 200));
        assertNotEquals(java.util.Arrays.toString(draws(a, 200)), java.util.Arrays.toString(draws(b, 200)));
    }

    @Test
    void topKKeepsOnlyTheKMostLikely() {
        Set<Integer> seen = new HashSet<>();
        for (int t : draws(params(5f, 2, 1f, 0f, 1L, 1f, 0f, 0f, Map.of()), 500)) {
            seen.add(t);
        }
        assertEquals(Set.of(1, 5), seen);
    }

    @Test
    void topPKeepsTheSmallestSetReachingP() {
        // probabilities at T=1: token 1 ≈ 0.38, token 5 ≈ 0.35, token 2 ≈ 0.14 ... top_p 0.5 keeps {1, 5}
        Set<Integer> seen = new HashSet<>();
        for (int t : draws(params(1f, 0, 0.5f, 0f, 2L, 1f, 0f, 0f, Map.of()), 500)) {
            seen.add(t);
        }
        assertEquals(Set.of(1, 5), seen);
    }

    @Test
    void minPDropsTokensBelowAFractionOfTheTop() {
        // p(2)/p(1) = e^-1 ≈ 0.37; min_p 0.5 keeps tokens 1 and 5 (ratio e^-0.1) only
        Set<Integer> seen = new HashSet<>();
        for (int t : draws(params(1f, 0, 1f, 0.5f, 3L, 1f, 0f, 0f, Map.of()), 500)) {
            seen.add(t);
        }
        assertEquals(Set.of(1, 5), seen);
    }

    @Test
    void logitBiasCanForceOrBanAToken() {
        assertEquals(4, new Sampler(params(0f, 0, 1f, 0f, null, 1f, 0f, 0f, Map.of(4, 100f)), 6, new int[0])
                .sample(LOGITS, 0));
        assertEquals(5, new Sampler(params(0f, 0, 1f, 0f, null, 1f, 0f, 0f, Map.of(1, -100f)), 6, new int[0])
                .sample(LOGITS, 0));
    }

    @Test
    void repetitionPenaltyDividesPositiveLogitsOfSeenTokens() {
        // token 1 (3.0) seen in the prompt: 3.0/1.5 = 2.0 < 2.9 of token 5
        Sampler s = new Sampler(params(0f, 0, 1f, 0f, null, 1.5f, 0f, 0f, Map.of()), 6, new int[] {1});
        assertEquals(5, s.sample(LOGITS, 0));
    }

    @Test
    void presenceAndFrequencyPenaltiesApplyToOutputTokensOnly() {
        Sampler s = new Sampler(params(0f, 0, 1f, 0f, null, 1f, 0.05f, 0.1f, Map.of()), 6, new int[] {1, 1, 1});
        assertEquals(1, s.sample(LOGITS, 0), "prompt tokens are not penalized");
        s.accept(1);
        assertEquals(5, s.sample(LOGITS, 0), "3.0 - 0.05 - 0.1 = 2.85 < 2.9");
    }

    @Test
    void samplingNeverPicksAZeroProbabilityToken() {
        for (int t : draws(params(0.7f, 0, 0.9f, 0.05f, 9L, 1.1f, 0.1f, 0.1f, Map.of(3, Float.NEGATIVE_INFINITY)), 500)) {
            assertTrue(t != 3 && t != 4, "token " + t);
        }
    }

    @Test
    void invalidParametersAreRefusedByName() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> params(-1f, 0, 1f, 0f, null, 1f, 0f, 0f, Map.of()))
                .getMessage().contains("temperature"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> params(1f, 0, 0f, 0f, null, 1f, 0f, 0f, Map.of()))
                .getMessage().contains("top_p"));
    }

    /** The pruned draw as first written, sorting the whole vocabulary: the oracle for the filtered sort. */
    static int prunedByFullSort(float[] probs, int vocab, SamplingParams p, double uniform) {
        long[] order = new long[vocab];
        for (int i = 0; i < vocab; i++) {
            order[i] = ((long) (~Float.floatToIntBits(probs[i]) & 0x7FFFFFFF) << 32) | i;
        }
        java.util.Arrays.sort(order);
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
        double u = uniform * total;
        for (int i = 0; i < n; i++) {
            u -= probs[(int) order[i]];
            if (u <= 0) {
                return (int) order[i];
            }
        }
        return (int) order[n - 1];
    }

    /** Probabilities over the vocabulary: softmax of Gaussian logits, one dominant token, all equal, or few levels. */
    static float[] distribution(int kind, int vocab, java.util.SplittableRandom rnd) {
        double[] w = new double[vocab];
        for (int i = 0; i < vocab; i++) {
            w[i] = switch (kind) {
                case 0 -> Math.exp(rnd.nextGaussian() * 3.0);
                case 1 -> i == 17 ? 1e6 : rnd.nextDouble();
                case 2 -> 1.0;
                default -> rnd.nextInt(4) == 0 ? 0.0 : 1 + rnd.nextInt(5);
            };
        }
        double sum = 0;
        for (double v : w) {
            sum += v;
        }
        float[] probs = new float[vocab];
        for (int i = 0; i < vocab; i++) {
            probs[i] = (float) (w[i] / sum);
        }
        return probs;
    }

    @Test
    void prunedDrawIsTheDrawOfAFullSortForEveryCutoff() {
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(11);
        int vocab = 32000;
        long[] scratch = new long[vocab];
        int cases = 0;
        for (int kind = 0; kind < 4; kind++) {
            for (int topK : new int[] {0, 1, 40, 50_000}) {
                for (float topP : new float[] {1f, 0.95f, 0.5f, 0.9999f}) {
                    for (float minP : new float[] {0f, 0.05f, 0.9f}) {
                        if (topK == 0 && topP == 1f && minP == 0f) {
                            continue; // nothing to prune: sample() draws over the whole vocabulary
                        }
                        SamplingParams p = params(0.8f, topK, topP, minP, 1L, 1f, 0f, 0f, Map.of());
                        for (int trial = 0; trial < 3; trial++) {
                            float[] probs = distribution(kind, vocab, rnd);
                            double u = trial == 2 ? 0.999999 : rnd.nextDouble();
                            assertEquals(prunedByFullSort(probs, vocab, p, u), Sampler.pruned(probs, vocab, p, u, scratch),
                                    "kind " + kind + " top_k " + topK + " top_p " + topP + " min_p " + minP);
                            cases++;
                        }
                    }
                }
            }
        }
        assertEquals(4 * 47 * 3, cases);
    }
}
