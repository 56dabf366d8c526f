package io.tqserve.engine;

import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.ForwardState;
import io.tqserve.model.Model;
import io.tqserve.model.Transformer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * Runs the code paths a request takes, on throwaway caches, before the server reports ready: the first request after
 * a start otherwise runs interpreted Vector API code (docs/configuration.md, {@code tqserve.backend.warmup}, has the
 * cost). Per round and KV scheme: a prefill (the matrix kernels),
 * decode steps (the matrix-vector kernels, attention over the stored cache), verification passes of prompt-lookup
 * speculation (the last token and {@link #DRAFTS} draft tokens with logits for every row, then the draft dropped:
 * the multi-row decode kernels and the cache's rollback), a truncation and a prefill continuing the kept prefix
 * (prefix reuse), and a two-sequence step (the batched lane's multi-chunk forward). Rounds repeat
 * until one is no faster than the best before it (after at least three: the JIT has compiled these paths; in an
 * already warm JVM that is three quick rounds) or the time budget is spent. The first round always runs, so a large
 * model costs at least one round (per scheme two prefills of 24 and 12 tokens, one of 8 continuing a kept prefix, 12
 * decode steps, verification passes of 2, 3 and 5 rows). Without the verification passes a server's first drafts ran
 * cold, at up to 24 plain steps for a one-token draft on the embedded model, and the lane's cost gate, which times
 * them, held drafting off until it timed them again. Nothing is kept: every cache is closed, no lane, metric or prompt cache is touched. Runs on the
 * calling thread (the model loader) and the backend's kernel pool.
 */
public final class Warmup {
    static final int PREFILL = 24;
    static final int DECODE = 6;
    static final int KEEP = 16;
    static final int CONTINUE = 8;
    /** Draft lengths of the verification passes per round (one pass each). */
    static final int[] DRAFTS = {1, 2, 4};
    /** Cache room a verification pass needs beyond the kept tokens: the last token and the longest draft. */
    private static final int[] NO_DRAFTS = {};
    private static final int DRAFT_ROOM = 1 + DRAFTS[DRAFTS.length - 1];
    /** Rounds before the warm-up may stop early because a round was not faster than the best before it. */
    static final int MIN_ROUNDS = 3;

    /** What a warm-up did. */
    public record Report(int rounds, int forwards, long millis) {
    }

    private Warmup() {
    }

    /**
     * @param schemes the lanes' KV schemes (each warmed in every round)
     * @param budget  keep starting rounds while less than this has passed; zero or negative: no warm-up at all
     */
    public static Report run(Model model, List<KvScheme> schemes, Duration budget) {
        return run(model, schemes, budget, () -> true);
    }

    /** As {@link #run(Model, List, Duration)}, starting no further round once {@code keepGoing} is false. */
    public static Report run(Model model, List<KvScheme> schemes, Duration budget, BooleanSupplier keepGoing) {
        long t0 = System.nanoTime();
        if (budget.isZero() || budget.isNegative() || schemes.isEmpty()) {
            return new Report(0, 0, 0);
        }
        Transformer t = model.transformer();
        int vocab = model.config().vocabSize();
        ForwardState state = new ForwardState(model.config());
        int forwards = 0;
        int rounds = 0;
        long best = Long.MAX_VALUE;
        do {
            long r0 = System.nanoTime();
            for (KvScheme scheme : schemes) {
                forwards += round(t, state, scheme, vocab, rounds);
            }
            long took = System.nanoTime() - r0;
            rounds++;
            if (rounds >= MIN_ROUNDS && took > best * 9 / 10) {
                break; // no longer getting faster: what the JIT compiles for these paths is compiled
            }
            best = Math.min(best, took);
        } while (System.nanoTime() - t0 < budget.toNanos() && keepGoing.getAsBoolean());
        return new Report(rounds, forwards, (System.nanoTime() - t0) / 1_000_000);
    }

    private static int round(Transformer t, ForwardState state, KvScheme scheme, int vocab, int round) {
        int maxTokens = PREFILL + DECODE + CONTINUE + DECODE + 2 + DRAFT_ROOM;
        int forwards = 0;
        List<KvCache> caches = new ArrayList<>(2);
        try {
            for (int s = 0; s < 2; s++) {
                caches.add(KvCacheFactory.create(scheme, t.attentionShape(), t.backend(), maxTokens));
            }
            KvCache a = caches.get(0);
            KvCache b = caches.get(1);
            int[] prompt = tokens(PREFILL, vocab, round);
            t.forward(state, List.of(Transformer.Chunk.of(a, prompt)));
            forwards++;
            for (int i = 0; i < DECODE; i++) {
                t.forward(state, List.of(Transformer.Chunk.of(a, tokens(1, vocab, round + i + 1))));
                forwards++;
            }
            for (int d : t.runsOnDevice(a) ? NO_DRAFTS : DRAFTS) { // a verification pass (CPU caches: a device
                // step samples on the device and never drafts), its draft then rejected: the cache drops it
                int kept = a.length();
                int[] in = tokens(1 + d, vocab, round + 23 + d);
                t.forward(state, List.of(new Transformer.Chunk(a, in, 0, in.length, true)));
                forwards++;
                a.truncate(kept + 1);
            }
            a.truncate(KEEP); // prefix reuse: continue a kept (possibly quantized) prefix with a multi-token prefill
            t.forward(state, List.of(Transformer.Chunk.of(a, tokens(CONTINUE, vocab, round + 7))));
            forwards++;
            t.forward(state, List.of(Transformer.Chunk.of(b, tokens(PREFILL / 2, vocab, round + 11))));
            forwards++;
            for (int i = 0; i < DECODE; i++) { // two sequences in one step, as the batched lane runs them
                t.forward(state, List.of(Transformer.Chunk.of(a, tokens(1, vocab, round + 13 + i)),
                        Transformer.Chunk.of(b, tokens(1, vocab, round + 17 + i))));
                forwards++;
            }
        } finally {
            for (KvCache c : caches) {
                c.close();
            }
        }
        return forwards;
    }

    /** n token ids spread over the vocabulary (skipping the first few, usually special tokens). */
    static int[] tokens(int n, int vocab, int seed) {
        int[] out = new int[n];
        int range = Math.max(1, vocab - 3);
        for (int i = 0; i < n; i++) {
            out[i] = 3 + (int) (((long) (seed * 31 + i) * 104_729L) % range);
        }
        return out;
    }
}
