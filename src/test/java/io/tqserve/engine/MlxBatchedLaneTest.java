package io.tqserve.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.DeviceStats;
import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.backend.mlx.MlxBackend;
import io.tqserve.backend.mlx.MlxOptions;
import io.tqserve.backend.mlx.MlxTestLibrary;
import io.tqserve.model.Model;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

/**
 * The batched lane on the MLX device decoder (native bf16): every step is one MLX evaluation whatever the number
 * of sequences, seeded sampling on the device gives a sequence the same tokens alone or among eight, and when the
 * sequences have ended MLX's active memory is back where it was before the first one. Skipped when libmlxc is
 * absent.
 */
@Tag("mlx")
class MlxBatchedLaneTest {
    static MlxBackend backend;
    static Model model;

    @BeforeEach
    void requireMlx() throws Exception {
        var runtime = MlxTestLibrary.open();
        if (backend == null) {
            backend = new MlxBackend(runtime, CpuBackend.create(1), MlxOptions.DEFAULTS);
            model = Model.load(Path.of("models/tiny-llama-h128"), backend);
        }
    }

    @AfterAll
    static void close() {
        if (model != null) {
            model.close();
            backend.close();
            model = null;
            backend = null;
        }
    }

    static BatchedBf16Lane lane() {
        BatchedBf16Lane lane = new BatchedBf16Lane(model, 64L << 20, 16, 8, 2048, 1);
        lane.start();
        return lane;
    }

    /** Seeded temperature + top-k + top-p + min-p + penalties, a seed per prompt. */
    static GenerationRequest seeded(int i, int maxTokens) {
        SamplingParams p = new SamplingParams(0.9f, 40, 0.9f, 0.02f, 1000L + i, 1.1f, 0.2f, 0.1f, Map.of(7, 1.5f),
                maxTokens, List.of(), true, -1);
        return new GenerationRequest(model.tokenizer().encode(BatchedLaneConcurrencyTest.PROMPTS[i]), p);
    }

    /** Runs the eight requests together (held until all are queued, so later steps serve all eight). */
    static int[][] together(BatchedBf16Lane lane, List<GenerationRequest> requests) throws Exception {
        CountDownLatch allQueued = new CountDownLatch(1);
        lane.setStepHook((request, generated) -> {
            try {
                allQueued.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        List<Flux<GenerationEvent>> fluxes = new ArrayList<>();
        for (GenerationRequest r : requests) {
            Flux<GenerationEvent> f = lane.submit(r).cache();
            f.subscribe();
            fluxes.add(f);
        }
        allQueued.countDown();
        int[][] out = new int[requests.size()][];
        for (int i = 0; i < out.length; i++) {
            out[i] = BatchedLaneConcurrencyTest.tokens(fluxes.get(i));
        }
        lane.setStepHook(null);
        return out;
    }

    @Test
    void eightSeededConcurrentRequestsGetTheirSoloTokensWithOneEvaluationPerStep() throws Exception {
        int n = 8;
        int maxTokens = 16;
        int[][] alone = new int[n][];
        try (BatchedBf16Lane lane = lane()) {
            for (int i = 0; i < n; i++) {
                alone[i] = BatchedLaneConcurrencyTest.tokens(lane.submit(seeded(i, maxTokens)));
                assertEquals(maxTokens, alone[i].length);
            }
        }
        try (BatchedBf16Lane lane = lane()) {
            List<GenerationRequest> requests = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                requests.add(seeded(i, maxTokens));
            }
            DeviceStats before = backend.deviceStats();
            long stepsBefore = lane.steps();
            int[][] batched = together(lane, requests);
            long steps = lane.steps() - stepsBefore;
            DeviceStats delta = backend.deviceStats().since(before);
            for (int i = 0; i < n; i++) {
                assertArrayEquals(alone[i], batched[i], "seeded prompt " + i + " in a batch of " + n);
            }
            assertEquals(n, lane.maxSequencesInOneStep(), "some step served all eight sequences");
            assertEquals(steps, delta.evaluations(), "one MLX evaluation per batched step (" + steps + " steps)");
            assertTrue(lane.overlappedSteps() >= maxTokens - 2, "decode steps were queued before the previous one was "
                    + "read: " + lane.overlappedSteps());
            System.out.printf("8 seeded sequences: %d steps (%d queued before the previous was read), %d evaluations, "
                    + "%d bytes to Java%n", steps, lane.overlappedSteps(), delta.evaluations(), delta.bytesToJava());
        }
    }

    @Test
    void afterEightStaggeredSequencesActiveMemoryIsBackToItsBaseline() throws Exception {
        try (BatchedBf16Lane lane = lane()) {
            long baseline = backend.mlx().activeMemory();
            CountDownLatch ended = new CountDownLatch(8);
            lane.setObserver((l, reason, prompt, completion) -> ended.countDown());
            List<Flux<GenerationEvent>> fluxes = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                Flux<GenerationEvent> f = lane.submit(seeded(i, 6 + 5 * i)).cache();
                f.subscribe();
                fluxes.add(f);
                // the next one starts once this one is generating: sequences join and leave at different steps
                f.filter(e -> e instanceof GenerationEvent.Token).blockFirst();
            }
            for (Flux<GenerationEvent> f : fluxes) {
                BatchedLaneConcurrencyTest.tokens(f);
            }
            assertTrue(ended.await(60, TimeUnit.SECONDS), "every sequence left the lane");
            assertTrue(lane.maxSequencesInOneStep() > 1, "the sequences overlapped");
            assertEquals(baseline, backend.mlx().activeMemory(), "MLX active memory after all sequences ended");
        }
    }
}
