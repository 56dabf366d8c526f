package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.management.ModelHealthIndicator;
import io.tqserve.model.ModelConfig;
import io.tqserve.routing.ServingRuntime;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.health.contributor.Status;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.server.HandlerStrategies;

/** While the model loads (or after it failed to load) the API answers 503 with Retry-After and health says so. */
class NotReadyTest {
    final ServingRuntime runtime;
    final WebTestClient http;

    NotReadyTest() throws Exception {
        ModelConfig config = ModelConfig.load(Path.of("models/tiny-llama-h128"));
        runtime = new ServingRuntime("tiny-llama-h128", config, "cpu", List.of());
        ApiSettings settings = new ApiSettings(List.of(), false, 512, Duration.ofSeconds(5), Duration.ofSeconds(2));
        ApiScheduler scheduler = new ApiScheduler();
        SnapshotHandler snapshots = new SnapshotHandler(runtime, settings, new SnapshotSettings(null), scheduler);
        var routes = new ApiRoutes().tqserveApi(new GenerationHandler(runtime, settings, scheduler, snapshots),
                new TokenizeHandler(runtime, settings, scheduler), snapshots);
        http = WebTestClient.bindToRouterFunction(routes)
                .handlerStrategies(HandlerStrategies.builder().exceptionHandler(new OpenAiErrorHandler()).build())
                .build();
    }

    @Test
    void generationAndTokenizeAre503WithRetryAfterWhileLoading() {
        assertThat(new ModelHealthIndicator(runtime).health().getStatus()).isEqualTo(Status.OUT_OF_SERVICE);
        for (String path : new String[] {"/v1/chat/completions", "/v1/completions", "/tokenize", "/detokenize",
                "/v1/kv/snapshots"}) {
            http.post().uri(path).contentType(MediaType.APPLICATION_JSON).bodyValue("{\"prompt\":\"x\"}").exchange()
                    .expectStatus().isEqualTo(503)
                    .expectHeader().valueEquals("Retry-After", "2")
                    .expectBody().jsonPath("$.error.code").isEqualTo("model_loading")
                    .jsonPath("$.error.type").isEqualTo("service_unavailable");
        }
        http.get().uri("/v1/models").exchange().expectStatus().isOk().expectBody()
                .jsonPath("$.data[0].id").isEqualTo("tiny-llama-h128");
    }

    @Test
    void aFailedLoadIsDownAnd503WithoutRetryAfter() {
        runtime.failed(new java.io.IOException("weights are truncated"));
        assertThat(new ModelHealthIndicator(runtime).health().getStatus()).isEqualTo(Status.DOWN);
        assertThat(new ModelHealthIndicator(runtime).health().getDetails()).containsEntry("error",
                "weights are truncated");
        http.post().uri("/v1/completions").contentType(MediaType.APPLICATION_JSON).bodyValue("{\"prompt\":\"x\"}")
                .exchange().expectStatus().isEqualTo(503)
                .expectHeader().doesNotExist("Retry-After")
                .expectBody().jsonPath("$.error.code").isEqualTo("model_failed");
    }
}
