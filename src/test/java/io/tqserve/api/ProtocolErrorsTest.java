package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.config.TqserveApplication;
import io.tqserve.engine.GenerationEvent;
import io.tqserve.engine.GenerationRequest;
import io.tqserve.engine.SamplingParams;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import reactor.core.Disposable;
import tools.jackson.databind.JsonNode;

/**
 * Error answers of the translated protocols in each protocol's own shape: a missing or wrong key (Bearer or
 * x-api-key), an unknown model (strict model ids), a bad request and a full lane queue.
 */
@SpringBootTest(classes = {TqserveApplication.class, LaneProbe.class},
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "tqserve.api.keys=" + ProtocolErrorsTest.KEY,
            "tqserve.api.strict-model-id=true",
            "tqserve.lanes.turbo.queue-capacity=1",
            "tqserve.api.keep-alive-interval=1h"
        })
class ProtocolErrorsTest extends ServingClient {
    static final String KEY = "proto-test-key";
    static final String MESSAGE = "{\"model\":\"tiny-llama-h128\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\","
            + "\"content\":\"hi\"}]}";

    HttpResponse<String> post(String path, String json, String... headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(baseUrl() + path))
                .header("Content-Type", "application/json").timeout(Duration.ofSeconds(120))
                .POST(HttpRequest.BodyPublishers.ofString(json));
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** Asserts Anthropic's error shape: exactly {@code type: error} and {@code error: {type, message}}. */
    static void anthropic(HttpResponse<String> r, int status, String type, String inMessage) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        assertThat(r.headers().firstValue("Content-Type").orElseThrow()).startsWith("application/json");
        JsonNode e = ToolsSdkTest.JSON.readTree(r.body());
        assertThat(e.get("type").asString()).isEqualTo("error");
        assertThat(e.get("error").get("type").asString()).isEqualTo(type);
        assertThat(e.get("error").get("message").asString()).contains(inMessage);
        assertThat(e.size()).isEqualTo(2);
        assertThat(e.get("error").size()).isEqualTo(2);
    }

    @Test
    void messagesAnswerErrorsInAnthropicsShape() throws Exception {
        anthropic(post("/v1/messages", MESSAGE), 401, "authentication_error", "missing API key");
        anthropic(post("/v1/messages", MESSAGE, "x-api-key", "wrong"), 401, "authentication_error", "invalid API key");
        anthropic(post("/v1/messages/count_tokens", MESSAGE), 401, "authentication_error", "missing API key");
        anthropic(post("/v1/messages", MESSAGE.replace("tiny-llama-h128", "claude-x"), "x-api-key", KEY), 404,
                "not_found_error", "claude-x");
        anthropic(post("/v1/messages", MESSAGE.replace("\"max_tokens\":4,", ""), "x-api-key", KEY), 400,
                "invalid_request_error", "max_tokens");
        var ok = post("/v1/messages", MESSAGE, "x-api-key", KEY, "anthropic-version", "2023-06-01");
        assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
        var bearer = post("/v1/messages/count_tokens", MESSAGE, "Authorization", "Bearer " + KEY);
        assertThat(bearer.statusCode()).as(bearer.body()).isEqualTo(200);
        assertThat(ToolsSdkTest.JSON.readTree(bearer.body()).get("input_tokens").asInt()).isPositive();
    }

    static final String RESPONSE = "{\"model\":\"tiny-llama-h128\",\"max_output_tokens\":4,\"input\":\"hi\"}";

    /** Asserts OpenAI's error shape: {@code {"error": {message, type, param, code}}}. */
    static JsonNode openAi(HttpResponse<String> r, int status, String type, String code) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        JsonNode e = ToolsSdkTest.JSON.readTree(r.body());
        assertThat(e.size()).isEqualTo(1);
        JsonNode error = e.get("error");
        assertThat(error.get("type").asString()).isEqualTo(type);
        assertThat(error.get("code").isNull() ? null : error.get("code").asString()).isEqualTo(code);
        assertThat(error.has("param")).isTrue();
        return error;
    }

    @Test
    void responsesAnswerErrorsInOpenAisShape() throws Exception {
        openAi(post("/v1/responses", RESPONSE), 401, "invalid_request_error", "invalid_api_key");
        JsonNode model = openAi(post("/v1/responses", RESPONSE.replace("tiny-llama-h128", "gpt-x"), "Authorization",
                "Bearer " + KEY), 404, "invalid_request_error", "model_not_found");
        assertThat(model.get("message").asString()).contains("gpt-x");
        JsonNode bad = openAi(post("/v1/responses", RESPONSE.replace("\"max_output_tokens\":4", "\"max_output_tokens\":-1"),
                "Authorization", "Bearer " + KEY), 400, "invalid_request_error", null);
        assertThat(bad.get("param").asString()).isEqualTo("max_output_tokens");
        var ok = post("/v1/responses", RESPONSE, "Authorization", "Bearer " + KEY);
        assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
        String id = ToolsSdkTest.JSON.readTree(ok.body()).get("id").asString();
        // kept per key: another key (none here) or no key cannot read it
        assertThat(client.send(HttpRequest.newBuilder(URI.create(baseUrl() + "/v1/responses/" + id))
                .header("Authorization", "Bearer " + KEY).GET().build(), HttpResponse.BodyHandlers.ofString())
                .statusCode()).isEqualTo(200);
        assertThat(client.send(HttpRequest.newBuilder(URI.create(baseUrl() + "/v1/responses/" + id)).GET().build(),
                HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(401);
    }

    @Test
    void aFullQueueIsARateLimitErrorInEachShape() throws Exception {
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        ((io.tqserve.engine.SerialTurboLane) runtime.lane(io.tqserve.engine.Lane.Kind.TURBO).orElseThrow())
                .setStepHook((request, generated) -> {
                    if (request.params().maxTokens() == 21 && generated == 0) {
                        running.countDown();
                        try {
                            release.await(60, TimeUnit.SECONDS);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }
                });
        CompletableFuture<HttpResponse<String>> first = CompletableFuture.supplyAsync(() -> {
            try {
                return post("/v1/completions", "{\"prompt\":[5,6,7,8,9],\"max_tokens\":21}", "X-Tqserve-Lane",
                        "turbo", "Authorization", "Bearer " + KEY);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        Disposable queued = null;
        try {
            assertThat(running.await(60, TimeUnit.SECONDS)).isTrue();
            queued = turboLane().submit(new GenerationRequest(new int[] {5, 6, 7, 8, 9}, SamplingParams.greedy(2)))
                    .subscribe((GenerationEvent e) -> { });
            assertThat(turboLane().waiting()).isEqualTo(1);
            var r = post("/v1/messages", MESSAGE, "x-api-key", KEY, "X-Tqserve-Lane", "turbo");
            anthropic(r, 429, "rate_limit_error", "retry later");
            assertThat(r.headers().firstValue("Retry-After")).hasValue("1");
            var resp = post("/v1/responses", RESPONSE, "Authorization", "Bearer " + KEY, "X-Tqserve-Lane", "turbo");
            openAi(resp, 429, "rate_limit_error", "queue_full");
            assertThat(resp.headers().firstValue("Retry-After")).hasValue("1");
        } finally {
            release.countDown();
            if (queued != null) {
                queued.dispose();
            }
        }
        assertThat(first.get(60, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    }
}
