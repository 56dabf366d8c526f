package io.tqserve.api;

import io.tqserve.constraint.ConstraintState;
import io.tqserve.constraint.TokenConstraint;
import io.tqserve.engine.Sampler;
import io.tqserve.engine.SamplingParams;
import io.tqserve.model.Model;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.BooleanSupplier;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.stereotype.Component;

/**
 * Runs the structured-output code paths before the server reports ready, so the JIT compiles the schema compiler
 * and the mask code then, not while the first schemas arrive beside other requests ({@code
 * tqserve.structured-output.warmup}, docs/configuration.md). Per round, each of a fixed set of chat requests with
 * representative schemas ({@link StructuredOutputWarmupRequests}) takes the request path up to the lane: the body
 * is parsed ({@link Json}, {@link RequestParser}), the prompt rendered and tokenized ({@link PromptBuilder}), the
 * constraint planned ({@link StructuredOutput#plan}) and compiled by the same callable a request's compile runs,
 * under the pool's limits; then a few synthetic outputs are sampled through it over the model's real constraint
 * vocabulary through a {@link ConstraintState} (a mask and an advance per token): the first by the lanes'
 * {@link Sampler} from fixed random logits, the others drawn from the allowed tokens (all unseeded, so the outputs
 * vary). Rounds repeat until one is no faster than the
 * best before it, after two rounds in which the JIT finished less than a twentieth of their time in compiles (and at
 * least {@link #MIN_ROUNDS}), or
 * the budget has passed (checked between requests, so one request past it at most).
 *
 * <p>Nothing is kept: the compiled constraints are dropped, no per-tenant cache entry is made (the requests never
 * go through {@link ConstraintCache}) and no structured-output metric moves (the compile observer is not called).
 * What stays is what the vocabulary shares between all schemas (the cached masks of JSON strings and whitespace,
 * which every request's masks would fill alike). A request that fails is counted and logged by the caller; the
 * others go on. It runs on the calling thread (the model loader), not on the compile pool: the pool's threads run
 * at the lowest OS priority, where on a busy host the warm-up would spend its budget waiting for a core.
 */
@Component
public final class StructuredOutputWarmup {
    /** Rounds before the warm-up may stop early because a round was not faster than the best before it. */
    static final int MIN_ROUNDS = 3;
    /** Synthetic outputs sampled through each compiled constraint per round. */
    static final int OUTPUTS = 4;

    /**
     * What a warm-up did.
     *
     * @param compiles    constraints compiled
     * @param masks       token masks computed (each followed by an advance, or the end of an output)
     * @param failures    requests that threw
     * @param firstFailure the first of them, or null
     */
    public record Report(int rounds, int compiles, int masks, int failures, Throwable firstFailure, long millis) {
        static final Report NONE = new Report(0, 0, 0, 0, null, 0);
    }

    private final ConstraintPool pool;
    private final ApiSettings api;
    private volatile Report last = Report.NONE;

    @Autowired
    StructuredOutputWarmup(ConstraintPool pool, ApiSettings api) {
        this.pool = pool;
        this.api = api;
    }

    /** The report of the last warm-up run ({@link Report#NONE} before any). */
    public Report last() {
        return last;
    }

    /**
     * @param budget    start no further request once this much time has passed; zero or negative: no warm-up
     * @param keepGoing starts no further request once false (shutdown)
     */
    public Report run(Model model, Duration budget, BooleanSupplier keepGoing) {
        long t0 = System.nanoTime();
        if (budget.isZero() || budget.isNegative()) {
            return last = Report.NONE;
        }
        long end = t0 + budget.toNanos();
        StructuredOutput structured = new StructuredOutput(model, pool); // its own cache, never used
        PromptBuilder builder = new PromptBuilder(structured, api);
        RequestParser parser = new RequestParser(model.config().vocabSize(), api.maxMessages(), api.maxPromptChars());
        List<byte[]> bodies = new ArrayList<>();
        for (String b : StructuredOutputWarmupRequests.bodies(ChatFormats.of(model).tools().isPresent())) {
            bodies.add(b.getBytes(StandardCharsets.UTF_8));
        }
        int[] eos = model.generation().eosTokenIds().stream().mapToInt(Integer::intValue).toArray();
        float[] logits = new float[model.config().vocabSize()]; // fixed: the samplers' draws vary the outputs
        SplittableRandom random = new SplittableRandom(29);
        for (int t = 0; t < logits.length; t++) {
            logits[t] = (float) (random.nextDouble() * 4);
        }
        int[] counts = new int[3]; // compiles, masks, failures
        Throwable first = null;
        int rounds = 0;
        long best = Long.MAX_VALUE;
        boolean out = false;
        int quiet = 0;
        while (!out) {
            long r0 = System.nanoTime();
            long jit0 = jitMillis();
            for (int i = 0; i < bodies.size(); i++) {
                if (System.nanoTime() - end > 0 || !keepGoing.getAsBoolean()) {
                    out = true;
                    break;
                }
                try {
                    request(parser, builder, bodies.get(i), eos, logits, counts);
                } catch (Exception | StackOverflowError e) { // the compile callable also throws checked ones
                    counts[2]++;
                    first = first == null ? e : first;
                }
            }
            if (out) {
                break;
            }
            long took = System.nanoTime() - r0;
            long jit = jitMillis() - jit0;
            rounds++;
            // The JIT compiles in the background, and while its queue is long (the lanes' warm-up leaves one) it
            // compiles methods without profiling, which delays their optimised versions: a round no faster than the
            // best may only mean that the queue has not reached these paths yet. So stop once, besides, the JIT
            // finished little compiling work in this round and the one before (its count is of completed compiles).
            quiet = jit >= 0 && jit * 1_000_000L * 20 < took ? quiet + 1 : 0;
            if (rounds >= MIN_ROUNDS && took > best * 9 / 10 && (jit < 0 || quiet >= 2)) {
                break;
            }
            best = Math.min(best, took);
        }
        return last = new Report(rounds, counts[0], counts[1], counts[2], first,
                (System.nanoTime() - t0) / 1_000_000);
    }

    /** One request: parsed, prepared, compiled, and {@link #OUTPUTS} outputs sampled through its constraint. */
    private static void request(RequestParser parser, PromptBuilder builder, byte[] body, int[] eos,
            float[] logits, int[] counts) throws Exception {
        int vocab = logits.length;
        ParsedRequest parsed = parser.parse(Json.read(body), Endpoint.CHAT, null);
        PromptBuilder.Prepared p = builder.prepare(parsed);
        StructuredOutput.Pending pending = p.plan().pending();
        TokenConstraint constraint;
        CompileAllocation.begin(); // as the compile pool does
        try {
            constraint = pending.compile().call();
        } finally {
            CompileAllocation.end();
        }
        counts[0]++;
        SamplingParams params = p.generation().params();
        // a request would be refused below minTokens (max_tokens_too_small); the warm-up samples through anyway
        int maxTokens = Math.max(params.maxTokens(), constraint.minTokens());
        SplittableRandom random = new SplittableRandom(); // unseeded, as the samplers: outputs vary
        for (int o = 0; o < OUTPUTS; o++) {
            ConstraintState state = new ConstraintState(constraint, eos, pending.gate());
            // the first output as the lanes sample (penalties, the mask applied to the logits, the draw); the others
            // draw from the allowed tokens directly, which costs less, so more masks fit in the budget
            Sampler sampler = o == 0 || pending.gate() >= 0
                    ? new Sampler(params, vocab, p.generation().promptTokens()) : null;
            for (int remaining = maxTokens; remaining > 0; remaining--) {
                int token = sampler != null ? sampler.sample(logits, 0, state, remaining)
                        : draw(state.allowed(remaining), random);
                counts[1]++;
                if (contains(eos, token)) {
                    break;
                }
                if (sampler != null) {
                    sampler.accept(token);
                }
                state.advance(token);
            }
        }
    }

    /** A token of the bitset {@code allowed} (which holds one at least), uniformly at random. */
    static int draw(long[] allowed, SplittableRandom random) {
        int n = 0;
        for (long w : allowed) {
            n += Long.bitCount(w);
        }
        int k = random.nextInt(n);
        for (int w = 0; w < allowed.length; w++) {
            int c = Long.bitCount(allowed[w]);
            if (k < c) {
                long bits = allowed[w];
                for (int i = 0; i < k; i++) {
                    bits &= bits - 1;
                }
                return (w << 6) + Long.numberOfTrailingZeros(bits);
            }
            k -= c;
        }
        throw new IllegalStateException("no token allowed");
    }

    private static final java.lang.management.CompilationMXBean JIT =
            java.lang.management.ManagementFactory.getCompilationMXBean();

    /** Time the JIT's compiler threads have spent compiling so far, or -1 where the JVM does not say. */
    private static long jitMillis() {
        return JIT != null && JIT.isCompilationTimeMonitoringSupported() ? JIT.getTotalCompilationTime() : -1;
    }

    private static boolean contains(int[] a, int v) {
        for (int x : a) {
            if (x == v) {
                return true;
            }
        }
        return false;
    }
}
