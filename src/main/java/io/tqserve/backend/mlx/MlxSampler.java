package io.tqserve.backend.mlx;

import io.tqserve.backend.DeviceSample;
import io.tqserve.backend.DeviceSampler;
import io.tqserve.backend.SamplingSpec;
import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxScope;
import io.tqserve.backend.mlx.ffm.MlxStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * One sequence's sampler as MLX ops, built into the step's graph so that only the token id (and logprobs when
 * asked) leave the device. The steps and their order are those of the engine's Java {@code Sampler}: repetition
 * penalty over prompt and output (Hugging Face: positive logits divided, negative multiplied), presence and
 * frequency penalties over the output, logit bias, then argmax (temperature 0) or: logits / temperature, sorted
 * descending, top-k, top-p (tokens up to and including the one whose cumulative probability reaches top_p) and
 * min-p (p ≥ min_p · p_max) cut, one draw from the kept tokens with the sequence's own PRNG key (MLX threefry,
 * split once per token), so equal seeds give equal tokens whatever else runs in the batch. The draw differs from
 * the Java sampler's (another generator).
 *
 * <p>State that changes per token (the key, the output counts, the seen mask) is staged by {@link #sample} and
 * made current by {@link #commit} as soon as the step is queued for evaluation ({@code mlx_async_eval}), before it
 * is computed: the next step builds on the queued arrays and MLX orders the two. A step that fails while its
 * graph is built calls {@link #abort} and leaves the state as it was.
 */
final class MlxSampler implements DeviceSampler {
    private final MlxBackend backend;
    private final SamplingSpec spec;
    private final int vocab;
    private final MlxStore store;
    private MlxArray key;    // (2,) uint32
    private MlxArray counts; // (1, vocab) float32 output occurrences
    private MlxArray seen;   // (1, vocab) float32 1 = in prompt or output
    private MlxArray bias;   // (1, vocab) float32
    private MlxArray nextKey;
    private MlxArray nextCounts;
    private MlxArray nextSeen;
    private boolean closed;

    MlxSampler(MlxBackend backend, SamplingSpec spec, int vocab) {
        this.backend = backend;
        this.spec = spec;
        this.vocab = vocab;
        this.store = backend.mlx().newStore();
        try {
            backend.device().run(s -> init(s, spec, vocab));
        } catch (RuntimeException e) {
            backend.device().heldRun(store::close);
            throw e;
        }
    }

    /** The initial state arrays; not evaluated here: they are computed with the first step that samples. */
    private void init(MlxScope s, SamplingSpec spec, int vocab) {
        if (!spec.greedy()) {
            key = store.keep(s.randomKey(spec.seed()));
        }
        if (spec.penalties()) {
            float[] seenInit = new float[vocab];
            for (int t : spec.promptTokens()) {
                if (t >= 0 && t < vocab) {
                    seenInit[t] = 1f;
                }
            }
            seen = store.keep(s.fromFloats(seenInit, 1, vocab));
            counts = store.keep(s.zeros(MlxDtype.FLOAT32, 1, vocab));
        }
        if (!spec.logitBias().isEmpty()) {
            float[] b = new float[vocab];
            for (Map.Entry<Integer, Float> e : spec.logitBias().entrySet()) {
                if (e.getKey() >= 0 && e.getKey() < vocab) {
                    b[e.getKey()] += e.getValue();
                }
            }
            bias = store.keep(s.fromFloats(b, 1, vocab));
        }
    }

    MlxBackend backend() {
        return backend;
    }

    /**
     * Whether this sampler is plain argmax (temperature 0, no penalties, no logit bias, no logprobs) and has no
     * state: the step samples such chunks together ({@code MlxPendingStep}).
     */
    boolean plainGreedy() {
        if (closed) {
            throw new IllegalStateException("sampler is closed");
        }
        return spec.greedy() && !spec.penalties() && bias == null && spec.topLogprobs() < 0;
    }

    int topLogprobs() {
        return spec.topLogprobs();
    }

    /**
     * Adds to the graph the sampling of one token from {@code logits} (1, vocab) float32, after {@code input}
     * (1,) int32, the previous output token fed at this step, is counted for the penalties. Returns the token as
     * (1,) int32; the new state is staged, to evaluate with the step ({@link #stateArrays}) and {@link #commit}.
     */
    MlxArray sample(MlxScope s, MlxArray logits, MlxArray input) {
        if (closed) {
            throw new IllegalStateException("sampler is closed");
        }
        MlxArray x = logits;
        if (spec.penalties()) {
            MlxArray oneHot = s.astype(s.equal(s.arange(0, vocab, MlxDtype.INT32), input), MlxDtype.FLOAT32);
            nextCounts = s.add(counts, oneHot);
            nextSeen = s.maximum(seen, oneHot);
            MlxArray zero = s.scalar(0f);
            float rep = spec.repetitionPenalty();
            if (rep != 1f) {
                MlxArray penalised = s.where(s.greater(x, zero), s.multiply(x, s.scalar(1f / rep)),
                        s.multiply(x, s.scalar(rep)));
                x = s.where(s.greater(nextSeen, zero), penalised, x);
            }
            if (spec.presencePenalty() != 0f || spec.frequencyPenalty() != 0f) {
                MlxArray present = s.astype(s.greater(nextCounts, zero), MlxDtype.FLOAT32);
                x = s.subtract(x, s.add(s.multiply(present, s.scalar(spec.presencePenalty())),
                        s.multiply(nextCounts, s.scalar(spec.frequencyPenalty()))));
            }
        }
        if (bias != null) {
            x = s.add(x, bias);
        }
        MlxArray token;
        if (spec.greedy()) {
            token = s.argmax(x, 1, false);
        } else {
            MlxArray[] split = s.randomSplit(key);
            nextKey = split[0];
            x = s.multiply(x, s.scalar(1f / spec.temperature()));
            boolean prune = spec.topK() > 0 || spec.topP() < 1f || spec.minP() > 0f;
            if (!prune) {
                token = s.categorical(x, 1, split[1]);
            } else {
                MlxArray order = s.argsort(s.multiply(x, s.scalar(-1f)), 1);   // (1, vocab) descending
                MlxArray sorted = s.takeAlongAxis(x, order, 1);
                MlxArray probs = s.softmax(sorted, 1);
                MlxArray before = s.subtract(s.cumsum(probs, 1), probs);      // mass of the tokens ranked above
                MlxArray keep = s.less(before, s.scalar(spec.topP()));
                if (spec.topK() > 0) {
                    keep = s.logicalAnd(keep, s.less(s.arange(0, vocab, MlxDtype.INT32), s.scalar(spec.topK())));
                }
                if (spec.minP() > 0f) {
                    MlxArray first = s.slice(probs, new int[] {0, 0}, new int[] {1, 1});
                    keep = s.logicalAnd(keep, s.greaterEqual(probs, s.multiply(first, s.scalar(spec.minP()))));
                }
                MlxArray masked = s.where(keep, sorted, s.scalar(Float.NEGATIVE_INFINITY));
                MlxArray rank = s.reshape(s.categorical(masked, 1, split[1]), 1, 1);
                token = s.takeAlongAxis(order, s.astype(rank, MlxDtype.INT32), 1);
            }
        }
        return s.reshape(s.astype(token, MlxDtype.INT32), 1);
    }

    /**
     * The logprob of {@code token} under the raw logits and, when asked, the top alternatives: a (1 + k) float32
     * array (chosen, then the k best) and a (k) int32 array of their ids (null when k = 0).
     */
    MlxArray[] logprobs(MlxScope s, MlxArray logits, MlxArray token) {
        MlxArray lse = s.logsumexp(logits, 1, true);
        MlxArray chosen = s.subtract(s.takeAlongAxis(logits, s.reshape(token, 1, 1), 1), lse);
        int k = Math.min(spec.topLogprobs(), vocab);
        if (k <= 0) {
            return new MlxArray[] {s.contiguous(s.reshape(chosen, 1)), null};
        }
        MlxArray order = s.slice(s.argsort(s.multiply(logits, s.scalar(-1f)), 1), new int[] {0, 0}, new int[] {1, k});
        MlxArray ids = s.astype(order, MlxDtype.INT32);
        MlxArray top = s.subtract(s.takeAlongAxis(logits, ids, 1), lse);
        MlxArray values = s.reshape(s.concatenate(1, chosen, top), 1 + k);
        return new MlxArray[] {s.contiguous(values), s.contiguous(s.reshape(ids, k))};
    }

    /** The staged state, to evaluate together with the step. */
    void stateArrays(List<MlxArray> into) {
        for (MlxArray a : new MlxArray[] {nextKey, nextCounts, nextSeen}) {
            if (a != null) {
                into.add(a);
            }
        }
    }

    /** Makes the staged state current (the step that staged it is queued for evaluation). */
    void commit() {
        if (nextKey != null) {
            key.set(nextKey);
        }
        if (nextCounts != null) {
            counts.set(nextCounts);
            seen.set(nextSeen);
        }
        abort();
    }

    /** Drops the staged state (the step failed before it was queued). */
    void abort() {
        nextKey = null;
        nextCounts = null;
        nextSeen = null;
    }

    /** Reads the sample of an evaluated step. */
    static DeviceSample read(MlxScope s, int token, MlxArray[] logprobs) {
        if (logprobs == null) {
            return new DeviceSample(token, Float.NaN, new int[0], new float[0]);
        }
        float[] values = s.readFloats(logprobs[0]);
        int[] ids = logprobs[1] == null ? new int[0] : s.readInts(logprobs[1]);
        return new DeviceSample(token, values[0], ids, java.util.Arrays.copyOfRange(values, 1, values.length));
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        backend.device().heldRun(store::close);
    }
}
