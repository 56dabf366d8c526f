package io.tqserve.engine;

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
 * decode steps so running streams are not starved. The chunking of a sequence never depends on the others, and
 * the kernels are batch-invariant, so a sequence produces the same tokens alone or in a batch.
 */
public final class BatchedBf16Lane extends AbstractLane {
    private final int maxBatch;
    private final int prefillChunk;
    private final int prefillsPerStep;
    private final ForwardState state;
    private final List<Sequence> active = new ArrayList<>();
    private volatile int maxSequencesInOneStep;
    private volatile long steps;

    /**
     * @param maxBatch        most sequences running at once
     * @param prefillChunk    prompt tokens a sequence prefills per step
     * @param prefillsPerStep most sequences prefilling in one step (the rest decode)
     */
    public BatchedBf16Lane(Model model, long kvBudgetBytes, int queueCapacity, int maxBatch, int prefillChunk,
            int prefillsPerStep) {
        super(model, KvScheme.BF16, kvBudgetBytes, queueCapacity, "tqserve-batched-lane");
        if (maxBatch < 1 || prefillChunk < 1 || prefillsPerStep < 1) {
            throw new IllegalArgumentException("max-batch, prefill-chunk and prefills-per-step must be >= 1");
        }
        this.maxBatch = maxBatch;
        this.prefillChunk = prefillChunk;
        this.prefillsPerStep = prefillsPerStep;
        this.state = new ForwardState(model.config());
    }

    @Override
    public Kind kind() {
        return Kind.BATCHED;
    }

    public int maxBatch() {
        return maxBatch;
    }

    /** The most sequences one step has served so far (evidence that steps really batch). */
    public int maxSequencesInOneStep() {
        return maxSequencesInOneStep;
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
            kvBytesInUse.set(0);
            return;
        }
        List<Transformer.Chunk> chunks = new ArrayList<>(active.size());
        List<Sequence> owners = new ArrayList<>(active.size());
        int prefilling = 0;
        for (Sequence s : active) {
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
                if (prefilling == prefillsPerStep) {
                    continue;
                }
                prefilling++;
                int n = Math.min(prefillChunk, s.prompt.length - s.prefilled);
                chunks.add(new Transformer.Chunk(s.cache, s.prompt, s.prefilled, n, false));
            } else {
                chunks.add(Transformer.Chunk.of(s.cache, new int[] {s.lastToken}));
            }
            owners.add(s);
        }
        if (!chunks.isEmpty()) {
            runStep(chunks, owners);
        }
        steps++;
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
                    consume(s, chunks.get(i), one, 0);
                } catch (RuntimeException | Error single) {
                    logFailure(s, single);
                    s.cache.truncate(s.cache.length());
                    s.fail("generation failed: " + describe(single), "server_error");
                }
            }
            return;
        }
        int vocab = model.config().vocabSize();
        presample(chunks, owners, logits, vocab);
        for (int i = 0; i < chunks.size(); i++) {
            consume(owners.get(i), chunks.get(i), logits, i * vocab);
        }
    }

    /**
     * Samples, on the kernel threads, the next token of every sequence that samples after this pass: sampling (a
     * softmax over the vocabulary, and a sort for top-k/top-p) is the heaviest per-sequence work between two passes,
     * and on the lane thread alone it would leave the kernel threads idle. {@link #consume} then hands the tokens out
     * in order on this thread; each sequence's tokens do not depend on where it sampled, its sampler being its own.
     */
    private void presample(List<Transformer.Chunk> chunks, List<Sequence> owners, float[] logits, int vocab) {
        int[] sampling = new int[chunks.size()];
        int n = 0;
        for (int i = 0; i < chunks.size(); i++) {
            Sequence s = owners.get(i);
            int prefilledAfter = s.inPrefill() ? s.prefilled + chunks.get(i).count() : s.prompt.length;
            if (!s.cancelled() && prefilledAfter >= s.prompt.length) {
                sampling[n++] = i;
            }
        }
        if (n < 2) {
            return;
        }
        model.transformer().backend().parallelFor(n, j -> owners.get(sampling[j]).presample(logits, sampling[j] * vocab));
    }

    private void consume(Sequence s, Transformer.Chunk chunk, float[] logits, int off) {
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
            step(s, logits, off);
        }
    }

    @Override
    protected void drainOnClose() {
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
