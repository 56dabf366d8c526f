package io.tqserve.api;

import io.micrometer.core.instrument.MeterRegistry;
import io.tqserve.engine.BatchedBf16Lane;
import io.tqserve.engine.Lane;
import io.tqserve.engine.SerialTurboLane;
import io.tqserve.engine.StepHook;
import io.tqserve.routing.ServingRuntime;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * What the HTTP test contexts share: the server's port, runtime and meters, an HTTP/1.1 client, waiting for the model
 * before each test and removing fault hooks after it. The contexts themselves ({@link ServingTestContext},
 * {@link HardenedServingContext}) say how the server is configured.
 */
abstract class ServingClient {
    @LocalServerPort
    int port;
    @Autowired
    ServingRuntime runtime;
    @Autowired
    MeterRegistry registry;
    @Autowired
    LaneProbe.Recorder probe;
    final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();

    @BeforeEach
    void awaitModel() throws Exception {
        runtime.whenLoaded().get(60, TimeUnit.SECONDS);
    }

    @AfterEach
    void clearHooks() {
        runtime.lane(Lane.Kind.BATCHED).ifPresent(l -> ((BatchedBf16Lane) l).setStepHook(StepHook.NONE));
        runtime.lane(Lane.Kind.TURBO).ifPresent(l -> ((SerialTurboLane) l).setStepHook(StepHook.NONE));
    }

    BatchedBf16Lane batchedLane() {
        return (BatchedBf16Lane) runtime.lane(Lane.Kind.BATCHED).orElseThrow();
    }

    SerialTurboLane turboLane() {
        return (SerialTurboLane) runtime.lane(Lane.Kind.TURBO).orElseThrow();
    }

    /** Requests answered with a 5xx so far, as the {@code http.server.requests} metric counts them. */
    double serverErrorsSoFar() {
        return registry.find("http.server.requests").timers().stream()
                .filter(t -> String.valueOf(t.getId().getTag("status")).startsWith("5"))
                .mapToDouble(t -> t.count()).sum();
    }

    String baseUrl() {
        return "http://localhost:" + port;
    }
}
