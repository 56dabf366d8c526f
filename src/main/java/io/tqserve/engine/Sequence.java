package io.tqserve.engine;

import io.tqserve.constraint.ConstraintState;
import io.tqserve.kv.KvCache;
import io.tqserve.model.StreamingDetokenizer;
import io.tqserve.model.Tokenizer;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import reactor.core.publisher.Sinks;

/**
 * One request inside a lane: its prompt, KV cache, sampler, detokenizer and stop matcher, and the sink its
 * events go to. Only the lane's thread touches it, except {@link #cancel()}.
 */
final class Sequence {
    private static final AtomicLong IDS = new AtomicLong();

    final long id = IDS.incrementAndGet();
    final GenerationRequest request;
    final int[] prompt;
    final long reservedBytes;
    private final Sinks.Many<GenerationEvent> sink;
    private final Sampler sampler;
    private final StreamingDetokenizer detokenizer;
    private final StopMatcher stops;
    private final Set<Integer> eos;
    private final Tokenizer tokenizer;
    private final int contextLimit;
    private final ConstraintState constraint; // null when the output is free
    private final ReasoningBudget.State reasoning; // null without a reasoning budget
    KvCache cache;
    io.tqserve.backend.DeviceSampler deviceSampler; // samples decode steps on the device (MLX), else null
    int prefilled;          // prompt tokens already in the cache
    private int presampled = -1;          // a token sampled ahead by presample, or -1
    private Throwable presampleFailure;   // what presample threw, rethrown by onLogits
    int generated;          // tokens sampled so far
    int lastToken = -1;     // token to feed at the next decode step
    int aheadInCache;       // tokens a queued device step stored in the cache that this sequence has not consumed yet
    int cachedTokens;       // prompt tokens restored from the prompt cache
    float[] readyLogits;    // next-token logits restored with a whole cached prompt (nothing left to prefill)
    long accountedKvBytes;  // this cache's bytes counted in the lane's kvBytesUsed
    // Prompt-lookup state, allocated at the first draft proposal (never for a request that opted out, a lane with
    // the lookup off, or a device-sampled sequence): prompt + output tokens, grown as the output grows.
    private int[] history;
    private int historyLength;
    int[] draft;            // draft tokens fed after lastToken in the pending verification pass (null until needed)
    int drafted;            // how many of draft[] the pending pass verifies (0: a plain decode step)
    private SpeculationGate.Acceptance acceptance; // this sequence's acceptance history (null until the first draft)
    FinishReason outcome;   // set when the sequence finishes or fails
    boolean released;       // KV memory and budget given back (once)
    private volatile boolean cancelled;
    private boolean done;

    Sequence(GenerationRequest request, long reservedBytes, Sinks.Many<GenerationEvent> sink, Tokenizer tokenizer,
            Set<Integer> eos, int vocabSize, int contextLimit) {
        this.request = request;
        this.prompt = request.promptTokens();
        this.reservedBytes = reservedBytes;
        this.sink = sink;
        this.tokenizer = tokenizer;
        this.sampler = new Sampler(request.params(), vocabSize, prompt);
        OutputRules rules = request.output();
        this.detokenizer = new StreamingDetokenizer(tokenizer, !rules.keepSpecialTokens());
        this.constraint = rules.constraint() == null ? null
                : new ConstraintState(rules.constraint(), eos.stream().mapToInt(Integer::intValue).toArray(),
                        rules.gateToken(), this::cancelled); // a cancelled request stops its mask mid-walk
        this.reasoning = rules.reasoningBudget() == null ? null : rules.reasoningBudget().start();
        this.stops = new StopMatcher(request.params().stop());
        this.eos = eos;
        this.contextLimit = contextLimit;
    }

    /** Most draft tokens one verification pass takes (a bound on the extra rows a sequence adds to a pass). */
    static final int MAX_DRAFT = 16;

    /**
     * Proposes the draft of the next decode step into {@link #draft} and sets {@link #drafted}: tokens the prompt
     * lookup finds after an earlier occurrence of the sequence's last tokens, as many as the gate finds worth their
     * rows at these pass costs given this sequence's acceptance so far
     * ({@link SpeculationGate}), never more than the tokens it may still generate or its cache may still hold. 0
     * when the request opted out. The first call allocates the lookup's history: the prompt and the token to feed
     * (the output before it is not kept; a lane calls this from the first decode step on).
     */
    int proposeDraft(PromptLookup lookup, SpeculationGate.PassCost cost) {
        drafted = 0;
        if (!request.speculative() || !lookup.enabled() || cache == null) {
            return 0;
        }
        int limit = Math.min(Math.min(Math.min(request.params().maxTokens() - generated - 1,
                Math.min(cache.maxTokens(), contextLimit) - cache.length() - 1), MAX_DRAFT), lookup.maxDraft());
        if (limit <= 0) {
            return 0;
        }
        if (history == null) {
            startHistory();
        }
        int want = acceptance.draftLength(cost, limit);
        if (want <= 0) {
            return 0;
        }
        drafted = lookup.propose(history, historyLength, draft, want);
        return drafted;
    }

    private void startHistory() {
        history = new int[prompt.length + Math.min(request.params().maxTokens(), 256) + 1];
        System.arraycopy(prompt, 0, history, 0, prompt.length);
        historyLength = prompt.length;
        if (generated > 0 && lastToken >= 0) {
            history[historyLength++] = lastToken;
        }
        draft = new int[Math.min(MAX_DRAFT, request.params().maxTokens())];
        acceptance = new SpeculationGate.Acceptance();
    }

    /** Feeds the gate how the pending draft fared: {@code accepted} of its {@code proposed} tokens were kept. */
    void draftOutcome(int accepted, int proposed) {
        if (acceptance != null) {
            acceptance.outcome(accepted, proposed);
        }
    }

    /** This sequence's estimated per-token draft acceptance (0.5 before its first draft). */
    double draftAcceptance() {
        return acceptance == null ? 0.5 : acceptance.p();
    }

    /** Whether the lookup's history and draft buffers were allocated (for tests). */
    boolean lookupAllocated() {
        return history != null;
    }

    /** The input of a verification pass: the last token, then the draft. */
    int[] verificationInput() {
        int[] in = new int[drafted + 1];
        in[0] = lastToken;
        System.arraycopy(draft, 0, in, 1, drafted);
        return in;
    }

    void cancel() {
        cancelled = true;
    }

    boolean cancelled() {
        return cancelled;
    }

    boolean done() {
        return done;
    }

    boolean inPrefill() {
        return prefilled < prompt.length;
    }

    void started(int cachedTokens) {
        emit(new GenerationEvent.Started(cachedTokens));
    }

    /**
     * Samples the next token from these logits ahead of {@link #onLogits} with the same logits, which then uses it
     * (or rethrows what sampling threw, so the failure stays this sequence's). Lets a lane sample its sequences in
     * parallel; one thread per sequence at a time, and the caller must hand over to the thread that calls onLogits
     * (the kernel pool's join does).
     */
    void presample(float[] logits, int off) {
        try {
            presampled = draw(logits, off);
        } catch (RuntimeException | Error e) {
            presampleFailure = e;
        }
    }

    /**
     * Consumes the next-token logits (after the whole prompt is in the cache, or after a decode step): samples,
     * emits, and decides whether the sequence goes on. Returns true when it finished.
     */
    boolean onLogits(float[] logits, int off) {
        SamplingParams p = request.params();
        int token = presampled;
        presampled = -1;
        Throwable failure = presampleFailure;
        presampleFailure = null;
        if (failure instanceof RuntimeException re) {
            throw re;
        }
        if (failure instanceof Error e) {
            throw e;
        }
        if (token < 0) {
            token = draw(logits, off);
        }
        float logprob = Float.NaN;
        List<GenerationEvent.TopLogprob> top = List.of();
        if (p.topLogprobs() >= 0) {
            double lse = logSumExp(logits, off, sampler.vocab());
            logprob = (float) (logits[off + token] - lse);
            top = topLogprobs(logits, off, p.topLogprobs(), lse);
        }
        return onToken(token, logprob, top);
    }

    /** A decode step's token sampled on the device (with the logprobs asked for); as {@link #onLogits}. */
    boolean onSample(io.tqserve.backend.DeviceSample sample) {
        List<GenerationEvent.TopLogprob> top = List.of();
        if (request.params().topLogprobs() >= 0) {
            top = new ArrayList<>(sample.topIds().length);
            for (int i = 0; i < sample.topIds().length; i++) {
                int id = sample.topIds()[i];
                top.add(new GenerationEvent.TopLogprob(id, tokenizer.decode(new int[] {id}), sample.topLogprobs()[i]));
            }
        }
        return onToken(sample.token(), sample.logprob(), top);
    }

    /** A device sampler's parameters: this request's, with its seed or a random one. */
    io.tqserve.backend.SamplingSpec deviceSamplingSpec() {
        SamplingParams p = request.params();
        long seed = p.seed() != null ? p.seed() : new java.util.SplittableRandom().nextLong();
        return new io.tqserve.backend.SamplingSpec(p.temperature(), p.topK(), p.topP(), p.minP(), seed,
                p.repetitionPenalty(), p.presencePenalty(), p.frequencyPenalty(), p.logitBias(), p.topLogprobs(),
                prompt);
    }

    private boolean onToken(int token, float logprob, List<GenerationEvent.TopLogprob> top) {
        SamplingParams p = request.params();
        sampler.accept(token);
        if (history != null) {
            if (historyLength == history.length) {
                history = java.util.Arrays.copyOf(history, Math.min(prompt.length + request.params().maxTokens() + 1,
                        2 * history.length));
            }
            if (historyLength < history.length) {
                history[historyLength++] = token;
            }
        }
        if (constraint != null) {
            constraint.advance(token);
        }
        if (reasoning != null) {
            reasoning.accept(token);
        }
        generated++;
        lastToken = token;
        if (eos.contains(token) && !p.ignoreEos()) {
            finish(FinishReason.STOP, stops.feed(detokenizer.flush()) + stops.flush());
            return true;
        }
        String text = stops.feed(detokenizer.next(token));
        emit(new GenerationEvent.Token(token, text, logprob, top));
        if (stops.stopped()) {
            finish(FinishReason.STOP, "");
            return true;
        }
        if (generated >= p.maxTokens() || cache.length() - aheadInCache + 1 > contextLimit) {
            finish(FinishReason.LENGTH, stops.feed(detokenizer.flush()) + stops.flush());
            return true;
        }
        return false;
    }

    private int draw(float[] logits, int off) {
        int forced = reasoning == null ? -1 : reasoning.forced();
        if (forced >= 0) {
            return forced; // the reasoning budget is spent: the end-of-reasoning marker comes next
        }
        if (constraint == null) {
            return sampler.sample(logits, off);
        }
        int remaining = Math.min(request.params().maxTokens() - generated, contextLimit - (cache.length() - aheadInCache));
        return sampler.sample(logits, off, constraint, Math.max(1, remaining));
    }

    private List<GenerationEvent.TopLogprob> topLogprobs(float[] logits, int off, int k, double lse) {
        List<GenerationEvent.TopLogprob> out = new ArrayList<>(k);
        int vocab = sampler.vocab();
        boolean[] taken = new boolean[vocab];
        for (int j = 0; j < k; j++) {
            int best = -1;
            for (int i = 0; i < vocab; i++) {
                if (!taken[i] && (best < 0 || logits[off + i] > logits[off + best])) {
                    best = i;
                }
            }
            taken[best] = true;
            out.add(new GenerationEvent.TopLogprob(best, tokenizer.decode(new int[] {best}),
                    (float) (logits[off + best] - lse)));
        }
        return out;
    }

    private static double logSumExp(float[] x, int off, int n) {
        double max = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < n; i++) {
            max = Math.max(max, x[off + i]);
        }
        double sum = 0;
        for (int i = 0; i < n; i++) {
            sum += Math.exp(x[off + i] - max);
        }
        return max + Math.log(sum);
    }

    void finish(FinishReason reason, String trailing) {
        if (done) {
            return;
        }
        done = true;
        outcome = reason;
        emit(new GenerationEvent.Finished(reason, trailing, prompt.length, generated, cachedTokens, stops.matched()));
        sink.tryEmitComplete();
    }

    void fail(String message, String type) {
        if (done) {
            return;
        }
        done = true;
        outcome = FinishReason.ERROR;
        emit(new GenerationEvent.Failed(message, type));
        sink.tryEmitComplete();
    }

    private void emit(GenerationEvent e) {
        sink.tryEmitNext(e);
    }
}
