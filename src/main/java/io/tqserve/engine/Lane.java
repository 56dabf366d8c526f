package io.tqserve.engine;

import io.tqserve.kv.KvLayout;
import io.tqserve.kv.KvScheme;
import reactor.core.publisher.Flux;

/**
 * An execution lane: a thread (or scheduler) that owns sequences and runs their forward passes. Submitting
 * returns a cold-ish {@link Flux} of events; cancelling it cancels the sequence and frees its KV memory.
 */
public interface Lane extends AutoCloseable {

    /** The lane's closed set of kinds. */
    enum Kind {
        TURBO("turbo"), BATCHED("batched");

        private final String wire;

        Kind(String wire) {
            this.wire = wire;
        }

        public String wireName() {
            return wire;
        }
    }

    Kind kind();

    KvScheme scheme();

    /** Exact KV bytes per token of this lane's caches. */
    KvLayout layout();

    /**
     * Queues a request. Admission: the request's worst-case KV bytes must fit the lane's budget; it waits in the
     * bounded queue until they do.
     *
     * @throws LaneRejectedException when the queue is full, the lane is closed, or the request can never fit
     */
    Flux<GenerationEvent> submit(GenerationRequest request);

    /** True when a request of {@code worstCaseTokens} could ever be admitted (fits the whole budget). */
    boolean canEverAdmit(int worstCaseTokens);

    /**
     * True when a request of {@code worstCaseTokens} would start at the lane's next scheduling point: a free slot
     * and KV budget room after the sequences running and queued before it (routing's budget fallback asks this).
     */
    boolean canAdmitNow(int worstCaseTokens);

    /** KV bytes held by live sequences' caches right now. */
    long kvBytesUsed();

    /** KV bytes reserved by admitted sequences (worst case). */
    long kvBytesReserved();

    /** The KV byte budget. */
    long kvBytesBudget();

    /** The lane's prompt (prefix) cache, when prefix reuse is on. */
    default java.util.Optional<io.tqserve.kv.store.PromptCache> promptCache() {
        return java.util.Optional.empty();
    }

    /** Sequences running. */
    int running();

    /** Sequences waiting in the queue. */
    int waiting();

    /** Stops taking requests, ends running sequences with an error event, frees all KV memory. */
    @Override
    void close();

    /** Draft tokens prompt lookup proposed for verification so far. */
    default long draftTokensProposed() {
        return 0;
    }

    /** Draft tokens that sampling confirmed (each saved a forward pass). */
    default long draftTokensAccepted() {
        return 0;
    }

    /** Forward passes that verified a draft. */
    default long verificationPasses() {
        return 0;
    }

    /** Tokens those passes emitted (accepted drafts plus the token each pass samples itself). */
    default long verificationTokens() {
        return 0;
    }
}
