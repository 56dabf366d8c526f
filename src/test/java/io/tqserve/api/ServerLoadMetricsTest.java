package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.engine.Lane;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * The replica-wide load gauges a router or autoscaler reads (one series each, no lane label):
 * {@code tqserve_server_requests_waiting}, {@code tqserve_server_requests_running} and
 * {@code tqserve_server_kv_usage} (worst-case KV bytes reserved over all lanes / all budgets). A turbo stream is held
 * at its third token by a step hook while a second turbo request waits behind it, so the values are exact.
 */
class ServerLoadMetricsTest extends ServingTestContext {
    static final String HELD = "{\"prompt\":\"The ls command\",\"max_tokens\":9,\"temperature\":0,\"ignore_eos\":true,"
            + "\"stream\":true,\"tqserve_lane\":\"turbo\"}";
    static final String QUEUED = "{\"prompt\":\"The ls command\",\"max_tokens\":5,\"temperature\":0,\"ignore_eos\":true,"
            + "\"tqserve_lane\":\"turbo\"}";

    double gauge(String name) {
        return registry.get(name).gauge().value();
    }

    String scrape() throws Exception {
        return client.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(baseUrl() + "/actuator/prometheus"))
                .build(), HttpResponse.BodyHandlers.ofString()).body();
    }

    @Test
    void gaugesSumBothLanesAndKvUsageIsTheReservedFractionOfAllBudgets() throws Exception {
        assertThat(gauge("tqserve.server.requests.waiting")).isZero();
        assertThat(gauge("tqserve.server.requests.running")).isZero();
        assertThat(gauge("tqserve.server.kv.usage")).isZero();
        assertThat(scrape()).contains("\ntqserve_server_requests_waiting 0.0\n", "\ntqserve_server_requests_running 0.0\n",
                "\ntqserve_server_kv_usage 0.0\n");

        CountDownLatch reached = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        turboLane().setStepHook(GracefulShutdownTest.holdAt(9, 2, reached, release));
        var pool = Executors.newVirtualThreadPerTaskExecutor();
        try {
            CompletableFuture<HttpResponse<String>> held = CompletableFuture.supplyAsync(() -> send(HELD), pool);
            assertThat(reached.await(60, TimeUnit.SECONDS)).isTrue();
            CompletableFuture<HttpResponse<String>> queued = CompletableFuture.supplyAsync(() -> send(QUEUED), pool);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (turboLane().waiting() < 1) { // the request reaches the lane's queue on another thread
                assertThat(System.nanoTime()).as("second request queued").isLessThan(deadline);
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
            }
            assertThat(post("/v1/completions", QUEUED).statusCode()).as("turbo queue of 1 is full").isEqualTo(429);

            Lane turbo = turboLane();
            Lane batched = batchedLane();
            assertThat(gauge("tqserve.server.requests.waiting")).isEqualTo(1.0);
            assertThat(gauge("tqserve.server.requests.running")).isEqualTo(1.0);
            long reserved = turbo.kvBytesReserved() + batched.kvBytesReserved();
            // The held request's worst case: 3 prompt tokens + 9, at 2400 turbo:k8v3 bytes per token.
            assertThat(reserved).isEqualTo(12L * 2400);
            double expected = (double) reserved / (turbo.kvBytesBudget() + batched.kvBytesBudget());
            assertThat(gauge("tqserve.server.kv.usage")).isEqualTo(expected).isBetween(0.0, 1.0);
            String s = scrape();
            assertThat(s).contains("\ntqserve_server_requests_waiting 1.0\n", "\ntqserve_server_requests_running 1.0\n",
                    "\ntqserve_server_kv_usage " + expected + "\n");

            release.countDown();
            List<String> frames = SseFormatTest.frames(held.get(60, TimeUnit.SECONDS).body());
            assertThat(frames.getLast()).isEqualTo("data: [DONE]");
            assertThat(queued.get(60, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        } finally {
            release.countDown();
            pool.shutdown();
        }
        // The lane releases a finished sequence on its own thread, possibly just after the response went out.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (gauge("tqserve.server.requests.running") != 0 || gauge("tqserve.server.kv.usage") != 0) {
            assertThat(System.nanoTime()).as("lanes released the finished requests").isLessThan(deadline);
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
        }
        assertThat(gauge("tqserve.server.requests.waiting")).isZero();
    }

    HttpResponse<String> send(String json) {
        try {
            return post("/v1/completions", json);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
