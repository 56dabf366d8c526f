package io.tqserve.engine;

import io.tqserve.backend.DeviceSample;
import io.tqserve.backend.PendingStep;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.ForwardState;
import io.tqserve.model.Model;
import io.tqserve.model.Transformer;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The batched lane: continuous batching with a bf16 KV cache. One scheduler thread runs a step for all active
 * sequences at once — a single forward pass whose rows are every sequence's new tokens, so each weight matrix is
 * read once per step. New sequences join between steps; prompts are prefilled in fixed chunks interleaved with
 * decode steps so running streams are not starved, shortest remaining prompt first so a short request is not
 * queued behind long prompts ({@link PrefillSchedule}). The chunking of a sequence never depends on the others, and
 * the kernels are batch-invariant, so a sequence produces the same tokens alone or in a batch.
 */
public final class BatchedBf16Lane extends AbstractLane {
    private final int maxBatch;
    private final int prefillChunk;
    private final ForwardState state;
    private final List<Sequence> active = new ArrayList<>();
    private volatile int maxSequencesInOneStep;
    private volatile long steps;
    private volatile long overlappedSteps;
    private boolean idleNotified = true; // lane thread only; nothing to release before the first step
    private InFlight inFlight;           // lane thread only: the device step queued last, not yet read
    private final PrefillSchedule prefills; // lane thread only

    /**
     * @param maxBatch        most sequences running at once
     * @param prefillChunk    prompt tokens a sequence prefills per step
     * @param prefillsPerStep prompt rows one step may prefill, in prefill chunks: {@code prefillsPerStep ×
     *                        prefillChunk} rows, one chunk a sequence, shortest remaining prompt first (the rest
     *                        decode)
     */
    public BatchedBf16Lane(Model model, long kvBudgetBytes, int queueCapacity, int maxBatch, int prefillChunk,
            int prefillsPerStep) {
        super(model, KvScheme.BF16, kvBudgetBytes, queueCapacity, "tqserve-batched-lane");
        if (maxBatch < 1 || prefillChunk < 1 || prefillsPerStep < 1) {
            throw new IllegalArgumentException("max-batch, prefill-chunk and prefills-per-step must be >= 1");
        }
        this.maxBatch = maxBatch;
        this.prefillChunk = prefillChunk;
        this.prefills = new PrefillSchedule(prefillChunk, prefillsPerStep);
        this.state = new ForwardState(model.config());
    }

    @Override
    public Kind kind() {
        return Kind.BATCHED;
    }

    public int maxBatch() {
        return maxBatch;
    }

    @Override
    protected int slots() {
        return maxBatch;
    }

    /** The most sequences one step has served so far (evidence that steps really batch). */
    public int maxSequencesInOneStep() {
        return maxSequencesInOneStep;
    }

    /** Device steps queued while the previous step was still unread (pipelined decode, MLX). */
    public long overlappedSteps() {
        return overlappedSteps;
    }

    /** Steps run so far. */
    public long steps() {
        return steps;
    }

    @Override
    protected void loop() throws InterruptedException {
        if (active.isEmpty()) {
            Sequence first = queue.pollFirst(1, TimeUnit.SECONDS);
            if (first == null) {
                return;
            }
            queue.addFirst(first);
        }
        admit();
        active.removeIf(s -> {
            if (s.cancelled()) {
                release(s);
                return true;
            }
            return false;
        });
        if (active.isEmpty()) {
            dropInFlight();
            kvBytesInUse.set(0);
            idle();
            return;
        }
        idleNotified = false;
        Transformer t = model.transformer();
        boolean pipeline = t.hasDevice() && active.stream().allMatch(s -> s.cache == null || t.runsOnDevice(s.cache));
        if (!pipeline && inFlight != null) {
            InFlight f = inFlight;
            inFlight = null;
            consumeInFlight(f);
        }
        java.util.Map<Sequence, Integer> flying = new java.util.IdentityHashMap<>();
        if (inFlight != null) {
            for (int i = 0; i < inFlight.owners().size(); i++) {
                flying.put(inFlight.owners().get(i), i);
            }
        }
        List<Transformer.Chunk> chunks = new ArrayList<>(active.size());
        List<Sequence> owners = new ArrayList<>(active.size());
        java.util.Set<Sequence> prefilling = prefills.choose(active, flying.keySet());
        stepSequences = active.size();
        for (Sequence s : active) {
            Integer fi = flying.get(s);
            if (fi != null) {
                // in the queued step: a decode step continues from the token it samples, still on the device,
                // unless that token ends the sequence (max_tokens, cache full); a prefill chunk waits for its result
                if (!s.done() && inFlight.chunks().get(fi).sampler() != null
                        && s.generated + 1 < s.request.params().maxTokens() && s.cache.length() < s.cache.maxTokens()) {
                    chunks.add(Transformer.Chunk.sampled(s.cache, inFlight.step().token(fi), s.deviceSampler));
                    owners.add(s);
                }
                continue;
            }
            if (s.readyLogits != null) {
                // the whole prompt came from the prompt cache: sample its first token now, decode from the next step
                float[] ready = s.readyLogits;
                s.readyLogits = null;
                if (!s.cancelled()) {
                    step(s, ready, 0);
                }
                continue;
            }
            if (s.done()) {
                continue;
            }
            if (s.inPrefill()) {
                if (!prefilling.contains(s)) {
                    continue;
                }
                int n = Math.min(prefillChunk, s.prompt.length - s.prefilled);
                chunks.add(new Transformer.Chunk(s.cache, s.prompt, s.prefilled, n, false));
            } else if (s.deviceSampler != null) {
                chunks.add(Transformer.Chunk.sampled(s.cache, s.lastToken, s.deviceSampler));
            } else {
                chunks.add(decodeChunk(s));
            }
            owners.add(s);
        }
        if (pipeline) {
            pipelinedStep(chunks, owners);
        } else if (!chunks.isEmpty()) {
            runStep(chunks, owners);
        }
        if (!chunks.isEmpty()) {
            steps++;
        }
        if (owners.size() > maxSequencesInOneStep) {
            maxSequencesInOneStep = owners.size();
        }
        for (Iterator<Sequence> it = active.iterator(); it.hasNext();) {
            Sequence s = it.next();
            if (s.done() || s.cancelled() || closed) {
                if (closed && !s.done()) {
                    s.fail("the server is shutting down", "server_shutdown");
                }
                release(s);
                it.remove();
            }
        }
        updateKvBytes(active);
        if (active.isEmpty() && queue.isEmpty()) {
            dropInFlight();
            idle();
        }
    }

    /** A queued device step: its chunks and their sequences, in order. */
    private record InFlight(PendingStep step, List<Transformer.Chunk> chunks, List<Sequence> owners) {
    }

    /**
     * The device path, pipelined as mlx-lm's generate_step: this step is queued (fed, for sequences in the step
     * queued last time, the tokens that step samples on the device) before the last step's tokens are read and
     * handed to the sequences, so the device computes step n+1 while Java emits step n. A sequence the last step's
     * token ends (end of sequence, a stop string) has one extra token computed and dropped with its cache.
     */
    private void pipelinedStep(List<Transformer.Chunk> chunks, List<Sequence> owners) {
        InFlight last = inFlight;
        inFlight = null;
        if (!chunks.isEmpty()) {
            try {
                PendingStep next = model.transformer().submit(chunks);
                inFlight = new InFlight(next, chunks, owners);
                if (last != null) {
                    overlappedSteps++;
                }
                for (int i = 0; i < chunks.size(); i++) {
                    if (chunks.get(i).sampler() != null) {
                        owners.get(i).aheadInCache++;
                    }
                }
            } catch (RuntimeException | Error e) {
                for (Sequence s : owners) {
                    s.cache.truncate(s.cache.length()); // drop what the failed graph stored
                }
                if (last != null) {
                    consumeInFlight(last); // Java now holds every token the step was fed
                    last = null;
                }
                runStep(rebuild(owners), liveOf(owners)); // one pass, then one by one: only a failing sequence fails
            }
        }
        if (last != null) {
            consumeInFlight(last);
        }
    }

    private static List<Sequence> liveOf(List<Sequence> owners) {
        return owners.stream().filter(s -> !s.done() && !s.cancelled()).toList();
    }

    /** The chunks of {@link #liveOf} these sequences, fed from Java (for the synchronous retry). */
    private List<Transformer.Chunk> rebuild(List<Sequence> owners) {
        List<Transformer.Chunk> out = new ArrayList<>();
        for (Sequence s : liveOf(owners)) {
            if (s.inPrefill()) {
                out.add(new Transformer.Chunk(s.cache, s.prompt, s.prefilled,
                        Math.min(prefillChunk, s.prompt.length - s.prefilled), false));
            } else if (s.deviceSampler != null) {
                out.add(Transformer.Chunk.sampled(s.cache, s.lastToken, s.deviceSampler));
            } else {
                out.add(Transformer.Chunk.of(s.cache, new int[] {s.lastToken}));
            }
        }
        return out;
    }

    /** Reads a queued step and hands its results to its sequences (those still running). */
    private void consumeInFlight(InFlight f) {
        int n = f.chunks().size();
        DeviceSample[] samples = new DeviceSample[n];
        float[] logits;
        try {
            logits = f.step().read(samples);
        } catch (RuntimeException | Error e) {
            for (Sequence s : f.owners()) {
                if (!s.done()) {
                    logFailure(s, e);
                    s.fail("generation failed: " + describe(e), "server_error");
                }
            }
            return;
        }
        int vocab = model.config().vocabSize();
        for (int i = 0; i < n; i++) {
            Sequence s = f.owners().get(i);
            if (samples[i] != null) {
                s.aheadInCache--;
            }
            if (s.done() || s.released) {
                continue;
            }
            consume(s, f.chunks().get(i), logits, i * vocab, samples[i]);
        }
    }

    /** Ends a queued step without reading it (its sequences are gone). */
    private void dropInFlight() {
        if (inFlight != null) {
            inFlight.step().close();
            inFlight = null;
        }
    }

    /** Nothing runs: a device backend gives its cached buffers back (once per idle period). */
    private void idle() {
        if (idleNotified) {
            return;
        }
        idleNotified = true;
        try {
            model.transformer().backend().onIdle();
        } catch (RuntimeException e) {
            System.getLogger(getClass().getName()).log(System.Logger.Level.WARNING, "releasing device buffers failed", e);
        }
    }

    private void admit() {
        while (active.size() < maxBatch) {
            Sequence s = queue.peekFirst();
            if (s == null) {
                return;
            }
            if (s.cancelled()) {
                queue.pollFirst();
                s.finish(FinishReason.CANCELLED, "");
                ended(s);
                continue;
            }
            if (!budget.tryReserve(s.reservedBytes)) {
                return; // waits in the queue until running sequences release their KV budget
            }
            queue.pollFirst();
            try {
                activate(s);
                if (model.transformer().runsOnDevice(s.cache) && !s.request.output().needsHostSampling()) {
                    s.deviceSampler = model.transformer().deviceSampler(s.deviceSamplingSpec()).orElse(null);
                }
                active.add(s);
            } catch (RuntimeException | OutOfMemoryError e) { // an allocation failure fails this sequence only
                logFailure(s, e);
                s.fail("could not start the sequence: " + describe(e), "server_error");
                release(s);
            }
        }
    }

    /** One forward pass for all chunks; a failure is isolated by re-running the chunks one by one. */
    private void runStep(List<Transformer.Chunk> chunks, List<Sequence> owners) {
        Transformer t = model.transformer();
        float[] logits;
        int decoding = 0;
        int draftRows = 0;
        for (int i = 0; i < chunks.size(); i++) {
            if (owners.get(i).inPrefill()) {
                decoding = -1; // a step with a prompt chunk says nothing about decode rows
                break;
            }
            decoding++;
            draftRows += chunks.get(i).count() - 1;
        }
        long t0 = SpeculationGate.now();
        try {
            logits = t.forward(state, chunks);
        } catch (RuntimeException | Error e) {
            for (Sequence s : owners) {
                s.cache.truncate(s.cache.length()); // drop what the failed pass stored
            }
            for (int i = 0; i < chunks.size(); i++) {
                Sequence s = owners.get(i);
                try {
                    float[] one = t.forward(state, List.of(chunks.get(i)));
                    consume(s, chunks.get(i), one, 0, state.sample(0));
                } catch (RuntimeException | Error single) {
                    logFailure(s, single);
                    s.cache.truncate(s.cache.length());
                    s.fail("generation failed: " + describe(single), "server_error");
                }
            }
            return;
        }
        int vocab = model.config().vocabSize();
        DeviceSample[] sampled = new DeviceSample[chunks.size()];
        int[] offsets = new int[chunks.size()]; // a verification pass has a row per input token
        int rows = 0;
        for (int i = 0; i < chunks.size(); i++) {
            sampled[i] = state.sample(i);
            offsets[i] = rows * vocab;
            rows += chunks.get(i).allLogits() ? chunks.get(i).count() : 1;
        }
        presample(chunks, owners, logits, offsets, sampled);
        for (int i = 0; i < chunks.size(); i++) {
            consume(owners.get(i), chunks.get(i), logits, offsets[i], sampled[i]);
        }
        if (decoding > 0) { // the pass and its sampling
            stepCost.observe(decoding, draftRows, SpeculationGate.now() - t0);
        }
    }

    /**
     * Samples, on the kernel threads, the next token of every sequence that samples after this pass: sampling (a
     * softmax over the vocabulary, and a sort for top-k/top-p) is the heaviest per-sequence work between two passes,
     * and on the lane thread alone it would leave the kernel threads idle. {@link #consume} then hands the tokens out
     * in order on this thread; each sequence's tokens do not depend on where it sampled, its sampler being its own.
     */
    private void presample(List<Transformer.Chunk> chunks, List<Sequence> owners, float[] logits, int[] offsets,
            DeviceSample[] sampled) {
        int[] sampling = new int[chunks.size()];
        int n = 0;
        for (int i = 0; i < chunks.size(); i++) {
            Sequence s = owners.get(i);
            int prefilledAfter = s.inPrefill() ? s.prefilled + chunks.get(i).count() : s.prompt.length;
            if (!s.cancelled() && prefilledAfter >= s.prompt.length && sampled[i] == null) {
                sampling[n++] = i;
            }
        }
        if (n < 2) {
            return;
        }
        model.transformer().backend().parallelFor(n, j -> owners.get(sampling[j]).presample(logits, offsets[sampling[j]]));
    }

    private void consume(Sequence s, Transformer.Chunk chunk, float[] logits, int off, DeviceSample sampled) {
        if (sampled != null) {
            if (!s.cancelled()) {
                step(s, sampled);
            }
            return;
        }
        if (s.inPrefill()) {
            s.prefilled += chunk.count();
            if (s.inPrefill()) {
                return;
            }
            if (afterPrefill(s, logits, off)) {
                return;
            }
        }
        if (!s.cancelled()) {
            decodeStep(s, logits, off);
        }
    }

    @Override
    protected void drainOnClose() {
        dropInFlight();
        for (Sequence s : active) {
            s.fail("the server is shutting down", "server_shutdown");
            release(s);
        }
        active.clear();
        kvBytesInUse.set(0);
        Sequence s;
        while ((s = queue.pollFirst()) != null) {
            s.fail("the server is shutting down", "server_shutdown");
            ended(s);
        }
    }
}
