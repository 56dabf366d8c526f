package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.config.TqserveApplication;
import io.tqserve.engine.Lane;
import io.tqserve.engine.StepHook;
import io.tqserve.routing.ServingRuntime;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Graceful shutdown, on a server of its own (the test closes it): once shutdown begins, new API requests are
 * answered 503 {@code shutting_down} with Retry-After and readiness is DOWN; a stream running then finishes
 * normally within the grace period (2 s here); a stream still running at the end of it gets one error event and
 * {@code [DONE]}; afterwards the lanes are closed with no KV memory held. The streams are held by step hooks,
 * so which one outlives the grace period does not depend on the machine's speed.
 */
class GracefulShutdownTest {
    static final String SHUTDOWN_ERROR = "data: {\"error\":{\"message\":\"the server is shutting down; the request "
            + "was ended\",\"type\":\"service_unavailable\",\"param\":null,\"code\":\"shutting_down\"}}";

    static StepHook holdAt(int maxTokens, int generated, CountDownLatch reached, CountDownLatch release) {
        return (request, g) -> {
            if (request.params().maxTokens() == maxTokens && g == generated) {
                reached.countDown();
                try {
                    release.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
    }

    static HttpRequest completion(int port, String json) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/completions"))
                .timeout(Duration.ofSeconds(60)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)).build();
    }

    @Test
    void shutdownRefusesNewRequestsLetsRunningOnesFinishAndEndsTheRestWithAnErrorEvent() throws Exception {
        SpringApplication app = new SpringApplication(TqserveApplication.class);
        app.setWebApplicationType(WebApplicationType.REACTIVE);
        ConfigurableApplicationContext ctx = app.run("--server.port=0", "--server.address=127.0.0.1",
                "--tqserve.kv.scheme=bf16", "--tqserve.api.shutdown-grace-period=2s",
                "--tqserve.api.keep-alive-interval=1h");
        ServingRuntime runtime = ctx.getBean(ServingRuntime.class);
        runtime.whenLoaded().get(60, TimeUnit.SECONDS);
        int port = ((WebServerApplicationContext) ctx).getWebServer().getPort();
        ShutdownDrain drain = ctx.getBean(ShutdownDrain.class);
        Lane turbo = runtime.lane(Lane.Kind.TURBO).orElseThrow();
        Lane batched = runtime.lane(Lane.Kind.BATCHED).orElseThrow();
        CountDownLatch atLong = new CountDownLatch(1);
        CountDownLatch atShort = new CountDownLatch(1);
        CountDownLatch releaseLong = new CountDownLatch(1);
        CountDownLatch releaseShort = new CountDownLatch(1);
        // The long stream (turbo lane) is held at its third token past the grace period; the short one (batched
        // lane) at its second token until shutdown has begun.
        ((io.tqserve.engine.SerialTurboLane) turbo).setStepHook(holdAt(60, 2, atLong, releaseLong));
        ((io.tqserve.engine.BatchedBf16Lane) batched).setStepHook(holdAt(4, 1, atShort, releaseShort));
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        CompletableFuture<HttpResponse<String>> longStream = client.sendAsync(completion(port, "{\"prompt\":\"The ls "
                + "command\",\"max_tokens\":60,\"temperature\":0,\"ignore_eos\":true,\"stream\":true,"
                + "\"tqserve_lane\":\"turbo\"}"), HttpResponse.BodyHandlers.ofString());
        CompletableFuture<HttpResponse<String>> shortStream = client.sendAsync(completion(port, "{\"prompt\":\"The ls "
                + "command\",\"max_tokens\":4,\"temperature\":0,\"ignore_eos\":true,\"stream\":true,"
                + "\"tqserve_lane\":\"batched\"}"), HttpResponse.BodyHandlers.ofString());
        assertThat(atLong.await(60, TimeUnit.SECONDS)).isTrue();
        assertThat(atShort.await(60, TimeUnit.SECONDS)).isTrue();

        Thread closer = Thread.ofPlatform().name("test-close").start(ctx::close);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!drain.draining()) { // a flag set by the context's close on another thread: poll with a deadline
            assertThat(System.nanoTime()).as("shutdown began").isLessThan(deadline);
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
        }
        HttpResponse<String> refused = client.send(completion(port, "{\"prompt\":\"x\",\"max_tokens\":1}"),
                HttpResponse.BodyHandlers.ofString());
        assertThat(refused.statusCode()).isEqualTo(503);
        assertThat(refused.headers().firstValue("Retry-After")).hasValue("1");
        assertThat(refused.body()).isEqualTo("{\"error\":{\"message\":\"the server is shutting down; retry on another "
                + "instance\",\"type\":\"service_unavailable\",\"param\":null,\"code\":\"shutting_down\"}}");
        HttpResponse<String> readiness = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port
                + "/actuator/health/readiness")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(readiness.statusCode()).isEqualTo(503);

        releaseShort.countDown(); // finishes well inside the grace period
        HttpResponse<String> s = shortStream.get(60, TimeUnit.SECONDS);
        List<String> shortFrames = SseFormatTest.frames(s.body());
        assertThat(shortFrames).hasSize(6);
        assertThat(shortFrames.get(4)).contains("\"finish_reason\":\"length\"");
        assertThat(shortFrames.get(5)).isEqualTo("data: [DONE]");

        HttpResponse<String> l = longStream.get(60, TimeUnit.SECONDS); // ended at the end of the grace period
        List<String> longFrames = SseFormatTest.frames(l.body());
        assertThat(longFrames).hasSize(4);
        assertThat(longFrames.get(0)).contains("\"text\":\" is\"");
        assertThat(longFrames.get(1)).contains("\"text\":\" used\"");
        assertThat(longFrames.get(2)).isEqualTo(SHUTDOWN_ERROR);
        assertThat(longFrames.get(3)).isEqualTo("data: [DONE]");
        releaseLong.countDown(); // the lane drops the cancelled sequence at its next step

        closer.join(TimeUnit.SECONDS.toMillis(60));
        assertThat(closer.isAlive()).as("the context closed").isFalse();
        assertThat(ctx.isActive()).isFalse();
        assertThat(turbo.kvBytesUsed()).isZero();
        assertThat(turbo.kvBytesReserved()).isZero();
        assertThat(batched.kvBytesUsed()).isZero();
        assertThat(batched.kvBytesReserved()).isZero();
        assertThat(drain.inFlight()).isZero();
    }
}
