package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.engine.GenerationEvent;
import io.tqserve.engine.GenerationRequest;
import io.tqserve.engine.SamplingParams;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;

/**
 * Each routing reason over HTTP: the X-Tqserve-Lane / X-Tqserve-Route-Reason headers and one count in
 * tqserve.routing.decisions{lane,reason}. The context routes worst cases above 16 tokens to the turbo lane, whose
 * budget holds 32 tokens; "The ls command" is 3 tokens.
 */
class RoutingHeadersTest extends ServingTestContext {

    void expectRoute(String json, String[] headers, String lane, String reason) throws Exception {
        double before = counter("tqserve.routing.decisions", "lane", lane, "reason", reason);
        HttpResponse<String> r = post("/v1/completions", json, headers);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(r.headers().firstValue("X-Tqserve-Lane")).hasValue(lane);
        assertThat(r.headers().firstValue("X-Tqserve-Route-Reason")).hasValue(reason);
        assertThat(counter("tqserve.routing.decisions", "lane", lane, "reason", reason)).isEqualTo(before + 1);
    }

    @Test
    void shortContextGoesToTheBatchedLane() throws Exception {
        expectRoute("{\"prompt\":\"The ls command\",\"max_tokens\":4}", new String[0], "batched", "short-context");
    }

    @Test
    void longContextGoesToTheTurboLane() throws Exception {
        expectRoute("{\"prompt\":\"The ls command\",\"max_tokens\":20}", new String[0], "turbo", "long-context");
    }

    @Test
    void budgetFallbackWhenTheTurboBudgetCannotHoldTheRequest() throws Exception {
        expectRoute("{\"prompt\":\"The ls command\",\"max_tokens\":40}", new String[0], "batched", "budget-fallback");
    }

    @Test
    void overrideByHeaderOrBodyWins() throws Exception {
        expectRoute("{\"prompt\":\"The ls command\",\"max_tokens\":4}", new String[] {"X-Tqserve-Lane", "turbo"},
                "turbo", "override");
        expectRoute("{\"prompt\":\"The ls command\",\"max_tokens\":20,\"tqserve_lane\":\"batched\"}", new String[0],
                "batched", "override");
    }

    /**
     * With the turbo lane busy and its one queue slot taken, a request only it may take (an override) is a 429
     * with Retry-After. The requests of this test have 5-token prompts, so the probe can wait for exactly them.
     */
    @Test
    void fullQueueIs429WithRetryAfter() throws Exception {
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        turboLane().setStepHook((request, generated) -> {
            if (request.params().maxTokens() == 21 && generated == 0) {
                running.countDown();
                try {
                    release.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        int[] prompt = {5, 6, 7, 8, 9};
        CompletableFuture<HttpResponse<String>> first = CompletableFuture.supplyAsync(() -> {
            try {
                return post("/v1/completions", "{\"prompt\":[5,6,7,8,9],\"max_tokens\":21}");
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        Disposable queued = null;
        try {
            assertThat(running.await(60, TimeUnit.SECONDS)).isTrue();
            // The turbo lane runs the first request; fill its one queue slot directly.
            queued = turboLane().submit(new GenerationRequest(prompt, SamplingParams.greedy(2)))
                    .subscribe((GenerationEvent e) -> { });
            assertThat(turboLane().waiting()).isEqualTo(1);
            HttpResponse<String> r = post("/v1/completions", "{\"prompt\":[5,6,7,8,9],\"max_tokens\":4}",
                    "X-Tqserve-Lane", "turbo");
            assertThat(r.statusCode()).as(r.body()).isEqualTo(429);
            assertThat(r.headers().firstValue("Retry-After")).hasValue("1");
            assertThat(r.headers().firstValue("X-Tqserve-Lane")).hasValue("turbo");
            assertThat(r.headers().firstValue("X-Tqserve-Route-Reason")).hasValue("override");
            assertThat(r.body()).contains("\"type\":\"rate_limit_error\"").contains("\"code\":\"queue_full\"");
        } finally {
            release.countDown();
            if (queued != null) {
                queued.dispose();
            }
        }
        assertThat(first.get(60, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        probe.awaitEnded(e -> e.lane() == io.tqserve.engine.Lane.Kind.TURBO && e.promptTokens() == 5, 2);
    }
}
