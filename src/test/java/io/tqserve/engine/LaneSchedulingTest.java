package io.tqserve.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.Model;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

/**
 * Which sequences a lane step serves, observed deterministically: a running "blocker" sequence holds the lane thread
 * in its step hook while the test queues requests, so they are all admitted at the same scheduling point, and the
 * hook records the lane's step count at each sequence's first sampled token.
 */
class LaneSchedulingTest {
    private static final int CHUNK = 8;

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

    static GenerationRequest request(int promptTokens, int maxTokens) {
        return new GenerationRequest(IntStream.range(0, promptTokens).map(i -> 100 + i).toArray(),
                SamplingParams.greedy(maxTokens));
    }

    /** Holds the lane in the blocker's first sampling step until {@link #release}; records first-token steps. */
    static final class Recorder implements StepHook {
        final GenerationRequest blocker = request(3, 12);
        final CountDownLatch blocked = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final Map<GenerationRequest, Long> firstTokenStep = new ConcurrentHashMap<>();
        volatile BatchedBf16Lane lane;

        @Override
        public void beforeSample(GenerationRequest request, int generated) {
            if (generated == 0 && lane != null) {
                firstTokenStep.put(request, lane.steps()); // the step being consumed: steps() counts it after
            }
            if (request == blocker && generated == 0) {
                blocked.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        /** Starts the batched lane with this hook and returns the blocker's stream once it holds the lane thread. */
        Flux<GenerationEvent> hold(BatchedBf16Lane batched) throws InterruptedException {
            lane = batched;
            batched.setStepHook(this);
            batched.start();
            Flux<GenerationEvent> stream = batched.submit(blocker);
            await(blocked);
            return stream;
        }
    }

    static void await(CountDownLatch latch) throws InterruptedException {
        assertThat(latch.await(60, TimeUnit.SECONDS)).as("latch").isTrue();
    }

    static void drain(List<Flux<GenerationEvent>> streams) {
        for (Flux<GenerationEvent> f : streams) {
            List<GenerationEvent> events = f.collectList().block();
            assertThat(events).noneMatch(e -> e instanceof GenerationEvent.Failed);
        }
    }

    @Test
    void shortPromptsAdmittedBehindALongOneArePrefilledFirstAndTheLongOneStillGetsEverySecondStep()
            throws Exception {
        Recorder rec = new Recorder();
        try (BatchedBf16Lane lane = new BatchedBf16Lane(model, 64L << 20, 16, 8, CHUNK, 1)) {
            Flux<GenerationEvent> blocker = rec.hold(lane);
            long b = rec.firstTokenStep.get(rec.blocker);
            GenerationRequest longOne = request(5 * CHUNK, 2); // five chunks
            GenerationRequest s1 = request(3, 2);
            GenerationRequest s2 = request(3, 2);
            GenerationRequest s3 = request(3, 2);
            List<Flux<GenerationEvent>> streams = List.of(blocker, lane.submit(longOne), lane.submit(s1),
                    lane.submit(s2), lane.submit(s3));
            rec.release.countDown();
            drain(streams);
            // step b+1: s1 and s2 (6 of the step's 8 prompt rows; s3 would make 9); the long prompt is passed over
            // b+2: the long prompt's first chunk (passed over last step, it goes first; s3 does not fit beside it)
            // b+3: s3; b+4..b+7: the long prompt's chunks 2-5, its first token at b+7
            assertThat(rec.firstTokenStep.get(s1)).isEqualTo(b + 1);
            assertThat(rec.firstTokenStep.get(s2)).isEqualTo(b + 1);
            assertThat(rec.firstTokenStep.get(s3)).isEqualTo(b + 3);
            assertThat(rec.firstTokenStep.get(longOne)).isEqualTo(b + 7);
        }
    }

    @Test
    void aBatchedLaneAdmitsNowWhileRunningAndQueuedSequencesLeaveASlot() throws Exception {
        Recorder rec = new Recorder();
        try (BatchedBf16Lane lane = new BatchedBf16Lane(model, 64L << 20, 16, 3, CHUNK, 1)) {
            Flux<GenerationEvent> blocker = rec.hold(lane);
            assertThat(lane.canAdmitNow(10)).as("one running of three slots").isTrue();
            Flux<GenerationEvent> second = lane.submit(request(3, 2));
            assertThat(lane.waiting()).isEqualTo(1);
            assertThat(lane.canAdmitNow(10)).as("the next step admits the queued request beside it").isTrue();
            Flux<GenerationEvent> third = lane.submit(request(3, 2));
            assertThat(lane.canAdmitNow(10)).as("one running and two queued fill three slots").isFalse();
            assertThat(lane.canAdmitNow(1 << 30)).isFalse();
            rec.release.countDown();
            drain(List.of(blocker, second, third));
        }
    }

    @Test
    void aSerialLaneDoesNotAdmitNowWhileItsSequenceRuns() throws Exception {
        Recorder rec = new Recorder();
        try (SerialTurboLane lane = new SerialTurboLane(model, KvScheme.BF16, 64L << 20, 16)) {
            lane.setStepHook(rec);
            lane.start();
            assertThat(lane.canAdmitNow(10)).isTrue();
            Flux<GenerationEvent> blocker = lane.submit(rec.blocker);
            await(rec.blocked);
            assertThat(lane.waiting()).isZero();
            assertThat(lane.canAdmitNow(10)).as("a request now would wait for all of the running one's tokens")
                    .isFalse();
            rec.release.countDown();
            drain(List.of(blocker));
        }
    }
}
