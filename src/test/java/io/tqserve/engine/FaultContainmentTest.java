package io.tqserve.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.Model;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import reactor.core.publisher.Flux;

/**
 * A fault inside one sequence's step — in the sampler (a RuntimeException or an Error thrown by the test-only
 * {@link StepHook}), inside the forward pass (its KV cache throws), or in the allocation of its KV cache —
 * fails that sequence only: it gets exactly one {@link GenerationEvent.Failed} after the tokens it had, the
 * sequences running beside it on the same lane (batched: in the same steps; serial: queued behind it) get
 * exactly the tokens they get alone, the lane serves the next request, and no KV byte stays reserved or used.
 * KV memory beyond the budget is refused by admission: sequences wait instead of allocating.
 */
class FaultContainmentTest {
    static final String[] PROMPTS = BatchedLaneConcurrencyTest.PROMPTS;
    static final int MAX_TOKENS = 12;
    static final int FAIL_AT = 3; // the victim fails at its 4th sampling step (3 tokens sent)

    static CpuBackend backend;
    static Model model;
    static int[][] alone;

    /** The faults a sequence can meet. */
    enum Fault {
        SAMPLER_EXCEPTION, SAMPLER_ERROR, CACHE_IN_FORWARD, CACHE_ALLOCATION
    }

    /** The two lanes. */
    enum LaneKind {
        BATCHED, SERIAL
    }

    @BeforeAll
    static void load() throws Exception {
        backend = CpuBackend.create(0);
        model = Model.load(Path.of("models/tiny-llama-h128"), backend);
        alone = new int[PROMPTS.length][];
        try (AbstractLane lane = lane(LaneKind.BATCHED, 64L << 20)) {
            for (int i = 0; i < PROMPTS.length; i++) {
                alone[i] = tokens(collect(lane.submit(request(i))));
            }
        }
    }

    @AfterAll
    static void close() {
        model.close();
        backend.close();
    }

    static AbstractLane lane(LaneKind kind, long budget) {
        AbstractLane lane = kind == LaneKind.BATCHED ? new BatchedBf16Lane(model, budget, 16, 8, 64, 1)
                : new SerialTurboLane(model, KvScheme.BF16, budget, 16);
        lane.start();
        return lane;
    }

    static GenerationRequest request(int i) {
        return new GenerationRequest(model.tokenizer().encode(PROMPTS[i]), SamplingParams.greedy(MAX_TOKENS));
    }

    static List<GenerationEvent> collect(Flux<GenerationEvent> f) {
        return f.collectList().block(Duration.ofSeconds(120));
    }

    static int[] tokens(List<GenerationEvent> events) {
        return events.stream().filter(e -> e instanceof GenerationEvent.Token)
                .mapToInt(e -> ((GenerationEvent.Token) e).tokenId()).toArray();
    }

    /** A cache that throws from attend (or stage, which the batched forward calls) once it holds {@code failAt} tokens: a fault inside the forward pass. */
    static KvCache failingFrom(KvCache delegate, int failAt) {
        return (KvCache) Proxy.newProxyInstance(KvCache.class.getClassLoader(), new Class<?>[] {KvCache.class},
                (proxy, method, args) -> {
                    if ((method.getName().equals("attend") || method.getName().equals("stage"))
                            && delegate.length() >= failAt) {
                        throw new IllegalStateException("injected cache fault at " + delegate.length());
                    }
                    try {
                        return method.invoke(delegate, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    /** A hook that injects {@code fault} into the sequence of {@code victim} and holds the first step until {@code go}. */
    static StepHook hook(Fault fault, GenerationRequest victim, CountDownLatch go) {
        return new StepHook() {
            @Override
            public void beforeSample(GenerationRequest request, int generated) {
                try {
                    go.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                if (request == victim && generated == FAIL_AT) {
                    switch (fault) {
                        case SAMPLER_EXCEPTION -> throw new IllegalStateException("injected sampler fault");
                        case SAMPLER_ERROR -> throw new AssertionError("injected error");
                        default -> {
                        }
                    }
                }
            }

            @Override
            public KvCache decorateCache(GenerationRequest request, KvCache cache) {
                if (request != victim) {
                    return cache;
                }
                return switch (fault) {
                    case CACHE_IN_FORWARD -> failingFrom(cache, request.promptTokens().length + FAIL_AT - 1);
                    case CACHE_ALLOCATION -> {
                        cache.close();
                        throw new OutOfMemoryError("injected: cannot allocate the KV cache");
                    }
                    default -> cache;
                };
            }
        };
    }

    @ParameterizedTest(name = "{0} lane, {1}")
    @MethodSource("lanesAndFaults")
    void aFaultFailsOnlyItsSequenceAndTheLaneServesOn(LaneKind kind, Fault fault) throws Exception {
        int victimIndex = 1;
        List<GenerationRequest> requests = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            requests.add(request(i));
        }
        GenerationRequest victim = requests.get(victimIndex);
        CountDownLatch allQueued = new CountDownLatch(1);
        CountDownLatch ended = new CountDownLatch(requests.size() + 1);
        try (AbstractLane lane = lane(kind, 64L << 20)) {
            lane.setStepHook(hook(fault, victim, allQueued));
            lane.setObserver((l, reason, prompt, completion) -> ended.countDown());
            List<Flux<GenerationEvent>> fluxes = new ArrayList<>();
            for (GenerationRequest r : requests) {
                Flux<GenerationEvent> f = lane.submit(r).cache();
                f.subscribe();
                fluxes.add(f);
            }
            allQueued.countDown();
            for (int i = 0; i < requests.size(); i++) {
                List<GenerationEvent> events = collect(fluxes.get(i));
                List<GenerationEvent> failures = events.stream().filter(e -> e instanceof GenerationEvent.Failed)
                        .toList();
                if (i == victimIndex) {
                    int sent = fault == Fault.CACHE_ALLOCATION ? 0 : FAIL_AT;
                    assertThat(tokens(events)).as("the victim's tokens before the fault")
                            .containsExactly(Arrays.copyOf(alone[i], sent));
                    assertThat(failures).as("one error event").hasSize(1);
                    assertThat(events.getLast()).isInstanceOf(GenerationEvent.Failed.class);
                    assertThat(events).noneMatch(e -> e instanceof GenerationEvent.Finished);
                    assertThat(((GenerationEvent.Failed) failures.getFirst()).message()).contains("injected");
                } else {
                    assertThat(failures).as("sequence " + i).isEmpty();
                    assertThat(tokens(events)).as("sequence " + i + " beside the failing one").containsExactly(alone[i]);
                }
            }
            if (kind == LaneKind.BATCHED && fault != Fault.CACHE_ALLOCATION) {
                assertThat(((BatchedBf16Lane) lane).maxSequencesInOneStep()).as("the four shared steps").isEqualTo(4);
            }
            // The lane serves the next request as if nothing had happened.
            lane.setStepHook(StepHook.NONE);
            assertThat(tokens(collect(lane.submit(request(5))))).containsExactly(alone[5]);
            assertThat(ended.await(60, TimeUnit.SECONDS)).as("every sequence left the lane, its KV freed").isTrue();
            assertThat(lane.kvBytesUsed()).isZero();
            assertThat(lane.kvBytesReserved()).isZero();
            assertThat(lane.running()).isZero();
        }
    }

    static Stream<Arguments> lanesAndFaults() {
        List<Arguments> out = new ArrayList<>();
        for (LaneKind k : LaneKind.values()) {
            for (Fault f : Fault.values()) {
                out.add(Arguments.of(k, f));
            }
        }
        return out.stream();
    }

    /**
     * A batched lane whose KV budget holds exactly two of these requests' worst cases runs at most two at once and
     * never reserves more than its budget; the others wait in the queue (no allocation, no OutOfMemoryError) and
     * every request still gets its tokens.
     */
    @ParameterizedTest
    @EnumSource(LaneKind.class)
    void kvBeyondTheBudgetWaitsInTheQueueInsteadOfBeingAllocated(LaneKind kind) throws Exception {
        List<GenerationRequest> requests = new ArrayList<>();
        long worst = 0;
        for (int i = 0; i < 5; i++) {
            GenerationRequest r = request(i);
            requests.add(r);
            worst = Math.max(worst, model.transformer().attentionShape().layout(KvScheme.BF16)
                    .bytesFor(r.worstCaseTokens()));
        }
        long budget = 2 * worst;
        AtomicInteger maxRunning = new AtomicInteger();
        AtomicInteger overBudget = new AtomicInteger();
        try (AbstractLane lane = lane(kind, budget)) {
            lane.setStepHook((request, generated) -> {
                maxRunning.accumulateAndGet(lane.running(), Math::max);
                if (lane.kvBytesReserved() > budget || lane.kvBytesUsed() > budget) {
                    overBudget.incrementAndGet();
                }
            });
            List<Flux<GenerationEvent>> fluxes = new ArrayList<>();
            for (GenerationRequest r : requests) {
                Flux<GenerationEvent> f = lane.submit(r).cache();
                f.subscribe();
                fluxes.add(f);
            }
            for (int i = 0; i < requests.size(); i++) {
                assertThat(tokens(collect(fluxes.get(i)))).containsExactly(alone[i]);
            }
            assertThat(maxRunning.get()).as("sequences running at once").isEqualTo(kind == LaneKind.BATCHED ? 2 : 1);
            assertThat(overBudget.get()).isZero();
            // A request that could never fit is refused at submission, before any allocation.
            GenerationRequest huge = new GenerationRequest(requests.get(0).promptTokens(),
                    SamplingParams.greedy(1500));
            assertThatThrownBy(() -> lane.submit(huge)).isInstanceOf(LaneRejectedException.class)
                    .extracting(e -> ((LaneRejectedException) e).reason())
                    .isEqualTo(LaneRejectedException.Reason.TOO_LARGE);
        }
    }
}
