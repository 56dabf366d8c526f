package io.tqserve.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.model.Model;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Flux;

/** The batched lane serves many sequences per step and each gets exactly the tokens it gets alone. */
class BatchedLaneConcurrencyTest {
    static final String[] PROMPTS = {
        "The ls command", "NAME\n       grep - print lines that match patterns", "SYNOPSIS\n       tar",
        "The following options are", "DESCRIPTION\n       The", "Exit status is 0 if",
        "See also the manual page of", "ENVIRONMENT\n       HOME"};
    static final int MAX_TOKENS = 24;

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

    static BatchedBf16Lane lane() {
        BatchedBf16Lane lane = new BatchedBf16Lane(model, 64L << 20, 16, 8, 64, 1);
        lane.start();
        return lane;
    }

    /** Greedy, or seeded temperature + top-p sampling (a seed per prompt): both must not depend on the batch. */
    static GenerationRequest request(int i, boolean sampled) {
        SamplingParams p = sampled ? new SamplingParams(0.9f, 0, 0.9f, 0f, 1000L + i, 1f, 0f, 0f, Map.of(), MAX_TOKENS,
                List.of(), false, -1) : SamplingParams.greedy(MAX_TOKENS);
        return new GenerationRequest(model.tokenizer().encode(PROMPTS[i]), p);
    }

    static int[] tokens(Flux<GenerationEvent> events) {
        List<Integer> ids = new ArrayList<>();
        for (GenerationEvent e : events.collectList().block()) {
            if (e instanceof GenerationEvent.Token t) {
                ids.add(t.tokenId());
            } else if (e instanceof GenerationEvent.Failed f) {
                throw new AssertionError("sequence failed: " + f.message());
            }
        }
        return ids.stream().mapToInt(Integer::intValue).toArray();
    }

    /** Sampled: the lane samples the batch's sequences in parallel on the kernel threads (BatchedBf16Lane.presample). */
    @ParameterizedTest(name = "sampled {0}")
    @ValueSource(booleans = {false, true})
    void eightConcurrentRequestsProduceTheirSoloTokensInBatchedSteps(boolean sampled) throws Exception {
        int n = PROMPTS.length;
        int[][] alone = new int[n][];
        try (BatchedBf16Lane lane = lane()) {
            for (int i = 0; i < n; i++) {
                alone[i] = tokens(lane.submit(request(i, sampled)));
            }
            assertEquals(1, lane.maxSequencesInOneStep(), "one request at a time never shares a step");
        }
        try (BatchedBf16Lane lane = lane()) {
            // Hold the first sequence's first sampling step until all eight are queued, so the lane admits the
            // other seven together and every later step serves all eight.
            CountDownLatch allQueued = new CountDownLatch(1);
            lane.setStepHook((request, generated) -> {
                try {
                    allQueued.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            CountDownLatch allEnded = new CountDownLatch(n);
            lane.setObserver((l, reason, prompt, completion) -> allEnded.countDown());
            List<Flux<GenerationEvent>> fluxes = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Flux<GenerationEvent> f = lane.submit(request(i, sampled)).cache();
                f.subscribe();
                fluxes.add(f);
            }
            allQueued.countDown();
            for (int i = 0; i < n; i++) {
                assertArrayEquals(alone[i], tokens(fluxes.get(i)), "prompt " + i + " in a batch of " + n);
            }
            assertEquals(n, lane.maxSequencesInOneStep(), "some step served all eight sequences at once");
            assertTrue(lane.steps() < (long) n * (MAX_TOKENS + 1), "batched steps, not one step per token: "
                    + lane.steps());
            assertTrue(allEnded.await(30, TimeUnit.SECONDS), "every sequence left the lane");
            assertEquals(0, lane.kvBytesUsed(), "KV bytes in use after all sequences ended");
            assertEquals(0, lane.kvBytesReserved(), "KV budget reserved after all sequences ended");
        }
    }
}
