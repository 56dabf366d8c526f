package io.tqserve.engine;

import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvLayout;
import io.tqserve.kv.KvScheme;
import io.tqserve.kv.store.KvSnapshot;
import io.tqserve.kv.store.PromptCache;
import io.tqserve.kv.store.SnapshotException;
import io.tqserve.model.Model;
import io.tqserve.model.Transformer;
import java.util.List;
import java.util.concurrent.BlockingDeque;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;

/** What both lanes share: the bounded queue, KV budget admission, sequence creation, cancellation and cleanup. */
abstract class AbstractLane implements Lane {
    protected final Model model;
    protected final KvScheme scheme;
    protected final KvLayout layout;
    protected final KvBudget budget;
    protected final int queueCapacity;
    protected final BlockingDeque<Sequence> queue;
    protected final AtomicInteger runningCount = new AtomicInteger();
    protected final AtomicLong kvBytesInUse = new AtomicLong();
    protected volatile boolean closed;
    protected volatile StepHook stepHook = StepHook.NONE;
    protected volatile PromptCache promptCache;
    protected volatile LaneObserver observer = LaneObserver.NONE;
    protected volatile PromptLookup promptLookup = PromptLookup.OFF;
    private final AtomicLong draftTokens = new AtomicLong();
    private final AtomicLong acceptedDraftTokens = new AtomicLong();
    private final AtomicLong verificationPasses = new AtomicLong();
    private final AtomicLong verifiedTokens = new AtomicLong();
    protected final Thread thread;
    /** What a step and a draft row cost on this lane, measured by its thread ({@link SpeculationGate}). */
    protected final SpeculationGate.StepCost stepCost = new SpeculationGate.StepCost();
    /** Decode sequences in the step being assembled (the lane's thread sets it before calling decodeChunk). */
    protected int stepSequences = 1;

    AbstractLane(Model model, KvScheme scheme, long kvBudgetBytes, int queueCapacity, String threadName) {
        this.model = model;
        this.scheme = scheme;
        this.layout = model.transformer().attentionShape().layout(scheme);
        this.budget = new KvBudget(kvBudgetBytes);
        this.queueCapacity = queueCapacity;
        this.queue = new LinkedBlockingDeque<>();
        this.thread = new Thread(this::loopGuarded, threadName);
        this.thread.setDaemon(true);
    }

    /** Starts the lane's thread. */
    public void start() {
        thread.start();
    }

    /** Installs a hook that runs at each sequence's step (tests inject faults with it). */
    public void setStepHook(StepHook hook) {
        this.stepHook = hook == null ? StepHook.NONE : hook;
    }

    /** Installs the observer told when each sequence leaves the lane (metrics). */
    public void setObserver(LaneObserver observer) {
        this.observer = observer == null ? LaneObserver.NONE : observer;
    }

    /** Installs prompt-lookup speculation ({@link PromptLookup#OFF} turns it off). */
    public void setPromptLookup(PromptLookup lookup) {
        this.promptLookup = lookup == null ? PromptLookup.OFF : lookup;
    }

    @Override
    public long draftTokensProposed() {
        return draftTokens.get();
    }

    @Override
    public long draftTokensAccepted() {
        return acceptedDraftTokens.get();
    }

    @Override
    public long verificationPasses() {
        return verificationPasses.get();
    }

    @Override
    public long verificationTokens() {
        return verifiedTokens.get();
    }

    /**
     * Proposes a draft for {@code seq}'s next decode step when speculation applies to it (CPU caches only: a device
     * step samples on the device) and pays by the lane's measured costs and the sequence's acceptance
     * ({@link SpeculationGate}), and returns the step's chunk: the last token alone, or the last token and the
     * draft with logits for every row.
     */
    protected Transformer.Chunk decodeChunk(Sequence seq) {
        if (seq.deviceSampler == null && !model.transformer().runsOnDevice(seq.cache)
                && seq.proposeDraft(promptLookup, stepCost.passCost(stepSequences)) > 0) {
            int[] in = seq.verificationInput();
            return new Transformer.Chunk(seq.cache, in, 0, in.length, true);
        }
        seq.drafted = 0;
        return Transformer.Chunk.of(seq.cache, new int[] {seq.lastToken});
    }

    /**
     * Consumes a decode step's logits: a plain step's one row, or a verification pass's rows (row i follows input i:
     * the last token, then the draft). Row i is sampled exactly as a plain decode step would sample it; draft token
     * i+1 is kept when that sample equals it, and the first mismatch (or the row after the whole draft) ends the
     * pass. At temperature 0 this keeps the greedy output; otherwise it is the exact rejection sampling of a
     * deterministic draft (accept d with probability p(d), else draw from p without d), in one draw per emitted
     * token, so a seed gives the same tokens with or without drafts. The cache then drops the rejected tokens.
     *
     * @return whether the sequence finished
     */
    protected boolean decodeStep(Sequence seq, float[] logits, int off) {
        int drafted = seq.drafted;
        if (drafted == 0) {
            return step(seq, logits, off);
        }
        seq.drafted = 0;
        int vocab = model.config().vocabSize();
        int base = seq.cache.length() - drafted - 1; // the cache before the pass
        int accepted = 0;
        boolean finished = false;
        for (int i = 0; i <= drafted; i++) {
            seq.aheadInCache = drafted - i; // rows after this one are not the sequence's yet
            finished = step(seq, logits, off + i * vocab);
            if (finished || i == drafted || seq.lastToken != seq.draft[i]) {
                break;
            }
            accepted++;
        }
        seq.aheadInCache = 0;
        if (seq.cache != null) {
            if (!finished) {
                seq.cache.truncate(base + 1 + accepted);
            }
            seq.draftOutcome(accepted, drafted);
        }
        draftTokens.addAndGet(drafted);
        acceptedDraftTokens.addAndGet(accepted);
        verificationPasses.incrementAndGet();
        verifiedTokens.addAndGet(accepted + 1L);
        return finished;
    }

    @Override
    public KvScheme scheme() {
        return scheme;
    }

    @Override
    public KvLayout layout() {
        return layout;
    }

    @Override
    public long kvBytesUsed() {
        return kvBytesInUse.get();
    }

    @Override
    public long kvBytesReserved() {
        return budget.reserved();
    }

    @Override
    public long kvBytesBudget() {
        return budget.budget();
    }

    @Override
    public int running() {
        return runningCount.get();
    }

    @Override
    public int waiting() {
        return queue.size();
    }

    /** Tokens a cache of this request may hold: prompt + max_tokens, capped by the model context. */
    protected int cacheTokens(GenerationRequest r) {
        return Math.min(r.worstCaseTokens(), model.config().maxPositions());
    }

    protected long worstCaseBytes(GenerationRequest r) {
        return layout.bytesFor(cacheTokens(r));
    }

    @Override
    public boolean canEverAdmit(int worstCaseTokens) {
        return layout.bytesFor(Math.min(worstCaseTokens, model.config().maxPositions())) <= budget.budget();
    }

    /**
     * True when a request submitted now starts at the lane's next scheduling point: the sequences running and those
     * queued before it leave a free slot ({@link #slots()}) and their KV reservations leave room for it. A queue of
     * requests that the next step admits anyway is no reason to send a request elsewhere; a sequence running on a
     * one-slot lane is (the request would wait for all of its tokens). A snapshot: both change as the lane runs.
     */
    @Override
    public boolean canAdmitNow(int worstCaseTokens) {
        long bytes = layout.bytesFor(Math.min(worstCaseTokens, model.config().maxPositions()));
        int waiting = 0;
        for (Sequence s : queue) {
            bytes += s.reservedBytes;
            waiting++;
        }
        return busySlots() + waiting < slots() && budget.fits(bytes);
    }

    /** Sequences this lane runs at once. */
    protected abstract int slots();

    /** Slots taken by sequences that left the queue (running, or being started). */
    protected int busySlots() {
        return runningCount.get();
    }

    @Override
    public Flux<GenerationEvent> submit(GenerationRequest request) {
        if (closed) {
            throw new LaneRejectedException(LaneRejectedException.Reason.CLOSED, kind().wireName() + " lane is shut down");
        }
        long bytes = worstCaseBytes(request);
        if (bytes > budget.budget()) {
            throw new LaneRejectedException(LaneRejectedException.Reason.TOO_LARGE, "the request needs " + bytes
                    + " KV bytes at worst; the " + kind().wireName() + " lane's budget is " + budget.budget());
        }
        Sinks.Many<GenerationEvent> sink = Sinks.many().unicast().onBackpressureBuffer();
        Sequence seq = new Sequence(request, bytes, sink, model.tokenizer(), model.generation().eosTokenIds(),
                model.config().vocabSize(), model.config().maxPositions());
        synchronized (queue) {
            if (queue.size() >= queueCapacity) {
                throw new LaneRejectedException(LaneRejectedException.Reason.QUEUE_FULL,
                        "the " + kind().wireName() + " lane's queue is full (" + queueCapacity + ")");
            }
            queue.addLast(seq);
        }
        return sink.asFlux().doOnCancel(seq::cancel);
    }

    /** Allocates the sequence's cache and counts it as running. */
    protected void activate(Sequence seq) {
        seq.cache = stepHook.decorateCache(seq.request, KvCacheFactory.create(scheme,
                model.transformer().attentionShape(), model.transformer().backend(), cacheTokens(seq.request)));
        runningCount.incrementAndGet();
        PromptCache pc = promptCache;
        KvSnapshot resume = seq.request.resumeFrom();
        if (resume != null) {
            try {
                resume.restoreInto(seq.cache);
            } catch (SnapshotException e) {
                throw new IllegalStateException(e.getMessage(), e);
            }
            seq.prefilled = resume.tokens().length;
            seq.cachedTokens = resume.tokens().length;
            if (seq.prefilled == seq.prompt.length) {
                seq.readyLogits = resume.logits().clone();
            }
        } else if (pc != null && seq.request.capture() == null) {
            PromptCache.Reuse reuse = pc.restoreLongestPrefix(seq.request.cacheNamespace(), seq.prompt, seq.cache);
            seq.prefilled = reuse.tokens();
            seq.cachedTokens = reuse.tokens();
            if (reuse.complete(seq.prompt.length)) {
                seq.readyLogits = reuse.logits();
            }
        }
        seq.started(seq.cachedTokens);
    }

    /** Offers a freshly prefilled prompt and its next-token logits (logits[off, off+vocab)) to the prompt cache. */
    protected void rememberPrompt(Sequence seq, float[] logits, int off) {
        PromptCache pc = promptCache;
        if (pc == null || seq.cachedTokens == seq.prompt.length) {
            return;
        }
        try {
            pc.insert(seq.request.cacheNamespace(), seq.prompt, seq.cache,
                    java.util.Arrays.copyOfRange(logits, off, off + model.config().vocabSize()));
        } catch (RuntimeException e) {
            System.getLogger(getClass().getName()).log(System.Logger.Level.WARNING, "prompt cache insert failed", e);
        }
    }

    /**
     * After the prompt is in the cache: a capture request gets its snapshot and ends here (true); any other
     * request offers its prompt to the prompt cache and goes on to sample (false).
     */
    protected boolean afterPrefill(Sequence seq, float[] logits, int off) {
        java.util.function.Consumer<KvSnapshot> capture = seq.request.capture();
        if (capture == null) {
            rememberPrompt(seq, logits, off);
            return false;
        }
        float[] next = java.util.Arrays.copyOfRange(logits, off, off + model.config().vocabSize());
        capture.accept(KvSnapshot.captureOnHeap(seq.cache, seq.prompt, next, model.fingerprint(), model.tokenizerHash()));
        seq.finish(FinishReason.STOP, "");
        return true;
    }

    /** Installs the lane's prompt (prefix) cache; null turns prefix reuse off. */
    public void setPromptCache(PromptCache cache) {
        this.promptCache = cache;
    }

    @Override
    public java.util.Optional<PromptCache> promptCache() {
        return java.util.Optional.ofNullable(promptCache);
    }

    /** Frees the sequence's cache and budget. Safe to call twice. */
    protected void release(Sequence seq) {
        if (seq.released) {
            return;
        }
        seq.released = true;
        if (seq.deviceSampler != null) {
            seq.deviceSampler.close();
            seq.deviceSampler = null;
        }
        KvCache c = seq.cache;
        if (c != null) {
            seq.cache = null;
            kvBytesInUse.addAndGet(-seq.accountedKvBytes);
            seq.accountedKvBytes = 0;
            c.close();
            runningCount.decrementAndGet();
        }
        budget.release(seq.reservedBytes);
        if (!seq.done()) {
            if (seq.cancelled()) {
                seq.finish(FinishReason.CANCELLED, "");
            } else {
                seq.fail("the sequence ended without a result", "server_error");
            }
        }
        ended(seq);
    }

    /** Tells the observer that {@code seq} left the lane; call once, after its KV memory was freed. */
    protected void ended(Sequence seq) {
        try {
            observer.sequenceEnded(this, seq.outcome == null ? FinishReason.ERROR : seq.outcome, seq.prompt.length,
                    seq.generated);
        } catch (RuntimeException e) {
            System.getLogger(getClass().getName()).log(System.Logger.Level.WARNING, "lane observer failed", e);
        }
    }

    /** Updates the bytes live caches hold (exact, from their layouts); released caches are already subtracted. */
    protected void updateKvBytes(List<Sequence> live) {
        for (Sequence s : live) {
            if (s.cache != null) {
                long now = s.cache.bytesUsed();
                kvBytesInUse.addAndGet(now - s.accountedKvBytes);
                s.accountedKvBytes = now;
            }
        }
    }

    /**
     * Runs the hook and the sampler step of one sequence; a throw fails that sequence only — also an Error (an
     * assertion, a stack overflow in a detokenizer), which would otherwise escape the step and wedge the lane.
     */
    protected boolean step(Sequence seq, float[] logits, int off) {
        try {
            stepHook.beforeSample(seq.request, seq.generated);
            return seq.onLogits(logits, off);
        } catch (io.tqserve.constraint.ConstraintBudgetException e) {
            seq.fail(e.getMessage(), GenerationEvent.Failed.SCHEMA_TOO_COMPLEX); // this request only: the schema's
            return true;
        } catch (RuntimeException | Error e) {
            logFailure(seq, e);
            seq.fail("generation failed: " + describe(e), "server_error");
            return true;
        }
    }

    /** As {@link #step(Sequence, float[], int)} for a token the device sampled. */
    protected boolean step(Sequence seq, io.tqserve.backend.DeviceSample sample) {
        try {
            stepHook.beforeSample(seq.request, seq.generated);
            return seq.onSample(sample);
        } catch (RuntimeException | Error e) {
            logFailure(seq, e);
            seq.fail("generation failed: " + describe(e), "server_error");
            return true;
        }
    }

    /** Logs why a sequence failed (its id and sizes, never its text). */
    protected void logFailure(Sequence seq, Throwable e) {
        System.getLogger(getClass().getName()).log(System.Logger.Level.WARNING, "sequence " + seq.id + " ("
                + seq.prompt.length + " prompt tokens, " + seq.generated + " generated) failed on the "
                + kind().wireName() + " lane", e);
    }

    /** A throwable's message for a client, or its class name when it has none (many Errors). */
    static String describe(Throwable t) {
        return t.getMessage() != null ? t.getMessage() : t.getClass().getSimpleName();
    }

    private void loopGuarded() {
        while (!closed) {
            try {
                loop();
            } catch (InterruptedException e) {
                if (closed) {
                    break;
                }
            } catch (Throwable t) {
                // A lane never dies from one bad step: log and continue.
                System.getLogger(getClass().getName()).log(System.Logger.Level.ERROR, "lane step failed", t);
            }
        }
        drainOnClose();
    }

    /** The lane's scheduling loop; returns or throws to be re-entered. */
    protected abstract void loop() throws InterruptedException;

    /** Ends everything still queued or running at shutdown. */
    protected abstract void drainOnClose();

    @Override
    public void close() {
        closed = true;
        thread.interrupt();
        try {
            thread.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        PromptCache pc = promptCache;
        if (pc != null) {
            pc.close(); // spills in-memory prefixes to the disk tier when one is configured
        }
    }

}
