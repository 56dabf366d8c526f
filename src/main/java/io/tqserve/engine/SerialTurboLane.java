package io.tqserve.engine;

import io.tqserve.kv.KvScheme;
import io.tqserve.model.ForwardState;
import io.tqserve.model.Model;
import io.tqserve.model.Transformer;
import java.util.List;

/**
 * The serial lane: one named thread runs one sequence at a time with the configured KV scheme (TurboQuant by
 * default), from a bounded queue. The prompt is prefilled in one pass, so it attends in full precision before
 * it is stored quantized; every decode step attends over the quantized cache.
 */
public final class SerialTurboLane extends AbstractLane {
    private final ForwardState state;
    private volatile Sequence current;

    public SerialTurboLane(Model model, KvScheme scheme, long kvBudgetBytes, int queueCapacity) {
        super(model, scheme, kvBudgetBytes, queueCapacity, "tqserve-turbo-lane");
        this.state = new ForwardState(model.config());
    }

    @Override
    public Kind kind() {
        return Kind.TURBO;
    }

    @Override
    protected int slots() {
        return 1;
    }

    @Override
    protected int busySlots() {
        return current != null ? 1 : runningCount.get();
    }

    @Override
    protected void loop() throws InterruptedException {
        Sequence seq = queue.takeFirst();
        if (seq.cancelled()) {
            seq.finish(FinishReason.CANCELLED, "");
            ended(seq);
            return;
        }
        if (!budget.tryReserve(seq.reservedBytes)) {
            seq.fail("the request does not fit the turbo lane's KV budget", "server_error");
            ended(seq);
            return;
        }
        current = seq;
        Transformer t = model.transformer();
        try {
            activate(seq);
            float[] logits;
            if (seq.readyLogits != null) {
                logits = seq.readyLogits; // the whole prompt came from the prompt cache
            } else {
                // A fresh prompt is prefilled in one pass (full-precision attention); after a cached prefix the
                // rest attends over the restored (quantized) cache.
                logits = t.forward(state, List.of(new Transformer.Chunk(seq.cache, seq.prompt, seq.prefilled,
                        seq.prompt.length - seq.prefilled, false)));
                seq.prefilled = seq.prompt.length;
            }
            updateKvBytes(List.of(seq));
            boolean finished = seq.cancelled() || (seq.readyLogits == null && afterPrefill(seq, logits, 0))
                    || step(seq, logits, 0);
            while (!finished && !seq.cancelled() && !closed) {
                Transformer.Chunk chunk = decodeChunk(seq);
                long t0 = SpeculationGate.now();
                logits = t.forward(state, List.of(chunk));
                finished = decodeStep(seq, logits, 0);
                stepCost.observe(1, chunk.count() - 1, SpeculationGate.now() - t0); // the pass and its sampling
                updateKvBytes(List.of(seq));
            }
            if (closed && !seq.done()) {
                seq.fail("the server is shutting down", "server_shutdown");
            }
        } catch (RuntimeException | Error e) { // a failed step or allocation fails this sequence only
            logFailure(seq, e);
            seq.fail("generation failed: " + describe(e), "server_error");
        } finally {
            release(seq);
            current = null;
            kvBytesInUse.set(0);
        }
    }

    @Override
    protected void drainOnClose() {
        Sequence s;
        while ((s = queue.pollFirst()) != null) {
            s.fail("the server is shutting down", "server_shutdown");
            ended(s);
        }
    }
}
