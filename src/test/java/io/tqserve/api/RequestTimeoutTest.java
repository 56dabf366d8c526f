package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.engine.FinishReason;
import io.tqserve.engine.Lane;
import io.tqserve.engine.StepHook;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.EntityExchangeResult;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.server.HandlerStrategies;

/**
 * {@code tqserve.api.request-timeout}: a stream still running at the timeout ends with one error event and
 * {@code [DONE]}, a non-streamed request is a 504; both sequences are cancelled and their KV memory freed, and the
 * lanes serve on. The handlers under test are built with a 2 s timeout over the shared context's live lanes (the
 * context itself has 7 min, so no other test can time out); the lanes are held inside the third sampling step
 * until both clients have their answers, so the timeout is the only way those can end.
 */
class RequestTimeoutTest extends HardenedServingContext {
    static final Duration TIMEOUT = Duration.ofSeconds(2);
    static final String TIMEOUT_ERROR = "{\"error\":{\"message\":\"the request did not finish within 2s "
            + "(tqserve.api.request-timeout)\",\"type\":\"timeout\",\"param\":null,\"code\":\"request_timeout\"}}";

    @Autowired
    ApiSettings contextSettings;
    @Autowired
    ApiScheduler scheduler;

    static StepHook holdAtThirdToken(int maxTokens, CountDownLatch release) {
        return (request, generated) -> {
            if (request.params().maxTokens() == maxTokens && generated == 2) {
                try {
                    release.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
    }

    WebTestClient clientWithTimeout(Duration timeout) {
        ApiSettings s = new ApiSettings(List.of(), false, 512, Duration.ofHours(1), Duration.ofSeconds(1), timeout,
                Duration.ofSeconds(15), false, 8, 4096, List.of("health"), List.of());
        SnapshotHandler snapshots = new SnapshotHandler(runtime, s, new SnapshotSettings(null), scheduler);
        var routes = new ApiRoutes().tqserveApi(new GenerationHandler(runtime, s, scheduler, snapshots),
                new TokenizeHandler(runtime, s, scheduler), snapshots);
        return WebTestClient.bindToRouterFunction(routes)
                .handlerStrategies(HandlerStrategies.builder().exceptionHandler(new OpenAiErrorHandler()).build())
                .configureClient().responseTimeout(Duration.ofSeconds(60)).build();
    }

    @Test
    void theConfiguredTimeoutIsBound() {
        assertThat(contextSettings.requestTimeout()).isEqualTo(Duration.ofMinutes(7));
    }

    @Test
    void aRequestPastItsTimeoutEndsWithATimeoutErrorAndFreesItsKv() throws Exception {
        WebTestClient http = clientWithTimeout(TIMEOUT);
        CountDownLatch release = new CountDownLatch(1);
        turboLane().setStepHook(holdAtThirdToken(50, release));
        batchedLane().setStepHook(holdAtThirdToken(51, release));
        Predicate<LaneProbe.Ended> cancelledTurbo = e -> e.lane() == Lane.Kind.TURBO
                && e.reason() == FinishReason.CANCELLED;
        Predicate<LaneProbe.Ended> cancelledBatched = e -> e.lane() == Lane.Kind.BATCHED
                && e.reason() == FinishReason.CANCELLED;
        int turboBefore = probe.awaitEnded(cancelledTurbo, 0).size();
        int batchedBefore = probe.awaitEnded(cancelledBatched, 0).size();

        CompletableFuture<EntityExchangeResult<byte[]>> streamed = CompletableFuture.supplyAsync(() -> http.post()
                .uri("/v1/completions").contentType(MediaType.APPLICATION_JSON)
                .bodyValue("{\"prompt\":\"The ls command\",\"max_tokens\":50,\"temperature\":0,\"ignore_eos\":true,"
                        + "\"stream\":true,\"tqserve_lane\":\"turbo\"}")
                .exchange().expectBody(byte[].class).returnResult());
        CompletableFuture<EntityExchangeResult<byte[]>> whole = CompletableFuture.supplyAsync(() -> http.post()
                .uri("/v1/completions").contentType(MediaType.APPLICATION_JSON)
                .bodyValue("{\"prompt\":\"The ls command\",\"max_tokens\":51,\"temperature\":0,\"ignore_eos\":true,"
                        + "\"tqserve_lane\":\"batched\"}")
                .exchange().expectBody(byte[].class).returnResult());
        EntityExchangeResult<byte[]> s = streamed.get(60, TimeUnit.SECONDS);
        EntityExchangeResult<byte[]> w = whole.get(60, TimeUnit.SECONDS);
        release.countDown(); // the lanes finish the step they were held in, then drop the cancelled sequences

        // The stream: the tokens sent before the timeout (two, unless this machine was slower than the timeout
        // before the hold), each the greedy continuation, then one error event and [DONE].
        assertThat(s.getStatus().value()).isEqualTo(200);
        List<String> frames = SseFormatTest.frames(new String(s.getResponseBody(), StandardCharsets.UTF_8));
        int tokens = frames.size() - 2;
        assertThat(tokens).isBetween(0, 2);
        String[] greedy = {"\"text\":\" is\"", "\"text\":\" used\""};
        for (int i = 0; i < tokens; i++) {
            assertThat(frames.get(i)).contains(greedy[i]);
        }
        assertThat(frames.get(tokens)).isEqualTo("data: " + TIMEOUT_ERROR);
        assertThat(frames.get(tokens + 1)).isEqualTo("data: [DONE]");

        assertThat(w.getStatus().value()).isEqualTo(504);
        assertThat(new String(w.getResponseBody(), StandardCharsets.UTF_8)).isEqualTo(TIMEOUT_ERROR);

        // Both sequences were cancelled and left their lanes (after their KV memory was freed).
        assertThat(probe.awaitEnded(cancelledTurbo, turboBefore + 1).getLast().completionTokens()).isLessThanOrEqualTo(3);
        assertThat(probe.awaitEnded(cancelledBatched, batchedBefore + 1).getLast().completionTokens())
                .isLessThanOrEqualTo(3);
        assertThat(turboLane().kvBytesUsed()).isZero();
        assertThat(turboLane().kvBytesReserved()).isZero();
        assertThat(batchedLane().kvBytesUsed()).isZero();
        assertThat(batchedLane().kvBytesReserved()).isZero();
        // Both lanes serve on.
        for (String lane : new String[] {"turbo", "batched"}) {
            assertThat(post("/v1/completions", "{\"prompt\":\"The ls command\",\"max_tokens\":2,\"tqserve_lane\":\""
                    + lane + "\"}").statusCode()).isEqualTo(200);
        }
    }
}
