package io.tqserve.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.ForwardState;
import io.tqserve.model.Model;
import io.tqserve.model.Transformer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Prompt-lookup speculation changes how many forward passes a sequence takes, never its tokens: on both lanes and
 * every KV scheme, greedy and seeded sampled output (with logprobs) is the same with and without drafts, and a
 * rolled-back TurboQuant cache holds exactly the bytes of one that never saw the rejected tokens.
 */
class SpeculativeDecodingTest {
    /** A page the model is asked to go on with after seeing it once: its continuation repeats the page. */
    static final String PAGE = "NAME\n       tar - an archiving utility\n\nSYNOPSIS\n       tar [OPTION...] [FILE]...\n\n"
            + "DESCRIPTION\n       GNU tar saves many files together into a single tape or disk archive, and can "
            + "restore individual files from the archive.\n";
    static final String[] PROMPTS = {PAGE + "\n" + PAGE.substring(0, 60), "The ls command", PAGE + PAGE.substring(0, 30)};
    static final int MAX_TOKENS = 48;
    static final PromptLookup LOOKUP = new PromptLookup(1, 4, 8);

    static CpuBackend backend;
    static Model model;

    @BeforeAll
    static void load() throws Exception {
        backend = CpuBackend.create(0);
        model = Model.load(Path.of("models/tiny-llama-h128"), backend);
    }

    @AfterAll
    static void close() {
        model.close();
        backend.close();
    }

    record Run(int[] tokens, float[] logprobs) {
    }

    static Run run(Lane lane, GenerationRequest r) {
        List<Integer> ids = new ArrayList<>();
        List<Float> lps = new ArrayList<>();
        for (GenerationEvent e : lane.submit(r).collectList().block()) {
            if (e instanceof GenerationEvent.Token t) {
                ids.add(t.tokenId());
                lps.add(t.logprob());
            } else if (e instanceof GenerationEvent.Failed f) {
                throw new AssertionError("sequence failed: " + f.message());
            }
        }
        float[] lp = new float[lps.size()];
        for (int i = 0; i < lp.length; i++) {
            lp[i] = lps.get(i);
        }
        return new Run(ids.stream().mapToInt(Integer::intValue).toArray(), lp);
    }

    static GenerationRequest request(String prompt, boolean sampled, long seed) {
        SamplingParams p = new SamplingParams(sampled ? 0.8f : 0f, 0, sampled ? 0.95f : 1f, 0f, seed, 1f, 0f, 0f,
                Map.of(), MAX_TOKENS, List.of(), true, 2);
        return new GenerationRequest(model.tokenizer().encode(prompt), p);
    }

    static AbstractLane lane(String kind, String scheme) {
        AbstractLane lane = kind.equals("batched") ? new BatchedBf16Lane(model, 64L << 20, 16, 8, 64, 1)
                : new SerialTurboLane(model, KvScheme.parse(scheme), 64L << 20, 16);
        lane.setPromptLookup(LOOKUP);
        // The gate's row cost is measured from step times, which move with the machine's load; pinned here so that
        // which drafts are proposed (and the assertions on them) does not depend on timing, and low (a fiftieth of a
        // token) so that drafts go on down to an acceptance of about 0.12 and the verification path is exercised
        // on every prompt, also where the output repeats little.
        lane.stepCost.pin(0.02);
        lane.start();
        return lane;
    }

    @ParameterizedTest(name = "{0} {1} sampled={2}")
    @CsvSource({"batched,bf16,false", "batched,bf16,true", "serial,turbo:k8v3,false", "serial,turbo:k8v3,true",
        "serial,turbo:k4v2,false", "serial,bf16,false"})
    void draftsNeverChangeTheOutput(String kind, String scheme, boolean sampled) {
        try (AbstractLane lane = lane(kind, scheme)) {
            for (int i = 0; i < PROMPTS.length; i++) {
                GenerationRequest r = request(PROMPTS[i], sampled, 7 + i);
                Run plain = run(lane, r.withSpeculative(false));
                long proposedBefore = lane.draftTokensProposed();
                Run spec = run(lane, r);
                assertArrayEquals(plain.tokens(), spec.tokens(), "prompt " + i);
                assertArrayEquals(plain.logprobs(), spec.logprobs(), "prompt " + i + " logprobs");
                if (i == 0) {
                    assertTrue(lane.draftTokensProposed() > proposedBefore, "the repeated page proposes drafts");
                }
            }
            assertTrue(lane.draftTokensAccepted() > 0, "some drafts were accepted");
            assertTrue(lane.verificationTokens() > lane.verificationPasses(), "accepted drafts saved passes");
        }
    }

    @Test
    void batchedSequencesWithAndWithoutDraftsShareSteps() {
        try (BatchedBf16Lane lane = (BatchedBf16Lane) lane("batched", "bf16")) {
            int n = PROMPTS.length;
            Run[] alone = new Run[n];
            for (int i = 0; i < n; i++) {
                alone[i] = run(lane, request(PROMPTS[i], false, 1).withSpeculative(false));
            }
            List<reactor.core.publisher.Flux<GenerationEvent>> fluxes = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                fluxes.add(lane.submit(request(PROMPTS[i], false, 1)).cache());
            }
            for (int i = 0; i < n; i++) {
                int[] ids = fluxes.get(i).ofType(GenerationEvent.Token.class).map(GenerationEvent.Token::tokenId)
                        .collectList().block().stream().mapToInt(Integer::intValue).toArray();
                assertArrayEquals(alone[i].tokens(), ids, "prompt " + i);
            }
        }
    }

    @Test
    void optOutProposesNothing() {
        try (AbstractLane lane = lane("serial", "turbo:k8v3")) {
            run(lane, request(PROMPTS[0], false, 1).withSpeculative(false));
            assertEquals(0, lane.draftTokensProposed());
        }
    }

    /**
     * The lookup's buffers (history of prompt + max_tokens, the draft) are allocated at a sequence's first draft
     * proposal on a lane with the lookup on, never for an opted-out request or with the lookup off.
     */
    @Test
    void lookupBuffersAreAllocatedOnlyWhenADraftIsProposed() {
        Transformer t = model.transformer();
        GenerationRequest r = request(PAGE + PAGE, false, 1);
        try (KvCache cache = KvCacheFactory.create(KvScheme.BF16, t.attentionShape(), t.backend(), 512)) {
            Sequence off = sequence(r);
            off.cache = cache;
            assertEquals(0, off.proposeDraft(PromptLookup.OFF, SpeculationGate.PassCost.linear(0.1)));
            assertEquals(false, off.lookupAllocated(), "lookup off");
            Sequence optedOut = sequence(r.withSpeculative(false));
            optedOut.cache = cache;
            assertEquals(0, optedOut.proposeDraft(LOOKUP, SpeculationGate.PassCost.linear(0.1)));
            assertEquals(false, optedOut.lookupAllocated(), "request opted out");
            Sequence on = sequence(r);
            assertEquals(false, on.lookupAllocated(), "nothing at admission");
            on.cache = cache;
            assertTrue(on.proposeDraft(LOOKUP, SpeculationGate.PassCost.linear(0.1)) > 0, "the repeated page proposes a draft");
            assertEquals(true, on.lookupAllocated());
            assertEquals(0, on.proposeDraft(LOOKUP, SpeculationGate.PassCost.linear(2.0)), "nothing pays at a row cost of two tokens");
        }
    }

    private static Sequence sequence(GenerationRequest r) {
        return new Sequence(r, 0, reactor.core.publisher.Sinks.many().unicast().onBackpressureBuffer(),
                model.tokenizer(), model.generation().eosTokenIds(), model.config().vocabSize(),
                model.config().maxPositions());
    }

    /**
     * Where the lane has measured draft rows as expensive (here: a row costs about two tokens), the gate proposes
     * only the one-token probes (at most one per four steps of a sequence), and the output is unchanged.
     */
    @Test
    void expensiveRowsLeaveOnlyProbes() {
        try (AbstractLane lane = lane("serial", "turbo:k8v3")) {
            GenerationRequest r = request(PROMPTS[0], false, 1);
            Run plain = run(lane, r.withSpeculative(false));
            lane.stepCost.pin(2.0); // the lane's thread is parked in take(): no race
            Run spec = run(lane, r);
            assertArrayEquals(plain.tokens(), spec.tokens());
            assertTrue(lane.draftTokensProposed() <= MAX_TOKENS / SpeculationGate.Acceptance.MIN_PROBE,
                    lane.draftTokensProposed() + " draft tokens");
        }
    }

    /**
     * A verification pass stores the last token and a draft; rejecting the draft truncates the cache. Its bytes
     * (every layer's exported entries) and the next pass's logits equal those of a cache that decoded token by token
     * and never saw the draft.
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"turbo:k8v3", "turbo:k4v2", "turbo:k8v8", "bf16"})
    void rollbackLeavesTheCacheAsIfTheDraftWasNeverSeen(String scheme) {
        Transformer t = model.transformer();
        KvScheme s = KvScheme.parse(scheme);
        int[] prompt = model.tokenizer().encode(PAGE);
        int vocab = model.config().vocabSize();
        ForwardState state = new ForwardState(model.config());
        try (KvCache plain = KvCacheFactory.create(s, t.attentionShape(), t.backend(), 512);
                KvCache spec = KvCacheFactory.create(s, t.attentionShape(), t.backend(), 512)) {
            t.forward(state, List.of(Transformer.Chunk.of(plain, prompt)));
            t.forward(state, List.of(Transformer.Chunk.of(spec, prompt)));
            int[] next = {prompt[5]};
            float[] a = t.forward(state, List.of(Transformer.Chunk.of(plain, next))).clone();
            // the same token, then a 6-token draft that is rejected at once (rows 1.. are thrown away)
            int[] in = {prompt[5], 11, 12, 13, 14, 15, 16};
            float[] b = t.forward(state, List.of(new Transformer.Chunk(spec, in, 0, in.length, true))).clone();
            for (int i = 0; i < vocab; i++) {
                assertEquals(Float.floatToIntBits(a[i]), Float.floatToIntBits(b[i]), "row 0 logit " + i);
            }
            spec.truncate(plain.length());
            assertEquals(plain.length(), spec.length());
            assertArrayEquals(export(plain), export(spec), "cache bytes after rollback");
            int[] after = {prompt[6]};
            float[] c = t.forward(state, List.of(Transformer.Chunk.of(plain, after))).clone();
            float[] d = t.forward(state, List.of(Transformer.Chunk.of(spec, after))).clone();
            assertArrayEquals(c, d, "the next step's logits");
            assertArrayEquals(export(plain), export(spec), "cache bytes one step later");
        }
    }

    static byte[] export(KvCache cache) {
        int layers = model.config().numLayers();
        try (Arena arena = Arena.ofConfined()) {
            List<byte[]> parts = new ArrayList<>();
            int total = 0;
            for (int l = 0; l < layers; l++) {
                long bytes = (long) cache.length() * cache.layout().numKvHeads() * cache.layout().bytesPerTokenPerHead();
                MemorySegment seg = arena.allocate(Math.max(1, bytes));
                cache.exportLayer(l, 0, cache.length(), seg);
                byte[] p = seg.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
                parts.add(p);
                total += p.length;
            }
            byte[] out = new byte[total];
            int o = 0;
            for (byte[] p : parts) {
                System.arraycopy(p, 0, out, o, p.length);
                o += p.length;
            }
            return out;
        }
    }
}
