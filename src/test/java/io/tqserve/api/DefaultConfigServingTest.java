package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.config.TqserveApplication;
import io.tqserve.routing.ServingRuntime;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * The server with the shipped application.yml (turbo lane on turbo:k8v3, batched lane bf16): metrics, info,
 * health, actuator exposure, models, tokenize, request validation. Nothing here generates on the turbo lane.
 */
@SpringBootTest(classes = TqserveApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class DefaultConfigServingTest {
    @LocalServerPort
    int port;
    @Autowired
    ServingRuntime runtime;
    WebTestClient http;

    @BeforeEach
    void client() throws Exception {
        runtime.whenLoaded().get(60, TimeUnit.SECONDS);
        http = WebTestClient.bindToServer().baseUrl("http://localhost:" + port)
                .responseTimeout(Duration.ofSeconds(60)).build();
    }

    String scrape() {
        return http.get().uri("/actuator/prometheus").exchange().expectStatus().isOk()
                .expectBody(String.class).returnResult().getResponseBody();
    }

    @Test
    void scrapeShowsExactKvBytesPerTokenOfBothLanes() {
        String s = scrape();
        assertThat(s).contains("tqserve_kv_bytes_per_token{lane=\"turbo\",scheme=\"turbo:k8v3\"} 2400.0\n");
        assertThat(s).contains("tqserve_kv_bytes_per_token{lane=\"batched\",scheme=\"bf16\"} 6144.0\n");
        assertThat(s).contains("tqserve_kv_compression_ratio{lane=\"turbo\",scheme=\"turbo:k8v3\"} 2.56\n");
        assertThat(s).contains("tqserve_kv_compression_ratio{lane=\"batched\",scheme=\"bf16\"} 1.0\n");
        assertThat(s).contains("tqserve_kv_bytes_budget{lane=\"turbo\"} 2.68435456E8\n");
        assertThat(s).contains("tqserve_model_info{architecture=\"LlamaForCausalLM\",backend=\"cpu\",head_dim=\"128\","
                + "model=\"tiny-llama-h128\",weight_bits=\"16\",weight_bytes=\"43797520\",weight_group_size=\"0\"} 1\n");
    }

    @Test
    void scrapeListsEveryMeterOfTheContract() {
        String s = scrape();
        for (String name : new String[] {"tqserve_kv_bytes_used{lane=\"turbo\"}", "tqserve_kv_usage{lane=\"batched\"}",
                "tqserve_requests_running{lane=\"batched\"}", "tqserve_requests_waiting{lane=\"turbo\"}",
                "tqserve_requests_finished_total{finish_reason=\"cancelled\",lane=\"batched\"}",
                "tqserve_routing_decisions_total{lane=\"turbo\",reason=\"long-context\"}",
                "tqserve_tokens_prompt_total{lane=\"batched\"}", "tqserve_tokens_generated_total{lane=\"turbo\"}",
                "tqserve_request_ttft_seconds_bucket{lane=\"batched\",le=", "tqserve_request_inter_token_seconds_count",
                "tqserve_request_e2e_seconds_bucket{lane=\"turbo\",le=", "tqserve_request_queue_seconds_sum"}) {
            assertThat(s).as(name).contains(name);
        }
    }

    @Test
    void infoNamesModelArchitectureHeadDimBackendAndLaneSchemes() {
        http.get().uri("/actuator/info").exchange().expectStatus().isOk().expectBody()
                .jsonPath("$.model.id").isEqualTo("tiny-llama-h128")
                .jsonPath("$.model.architecture").isEqualTo("LlamaForCausalLM")
                .jsonPath("$.model.headDim").isEqualTo(128)
                .jsonPath("$.model.weights.bytes").isEqualTo(43797520)
                .jsonPath("$.model.weights.bits").isEqualTo(16)
                .jsonPath("$.model.weights.groupSize").isEqualTo(0)
                .jsonPath("$.model.weights.format").isEqualTo("bfloat16")
                .jsonPath("$.backend.type").isEqualTo("cpu")
                .jsonPath("$.lanes.turbo.scheme").isEqualTo("turbo:k8v3")
                .jsonPath("$.lanes.turbo.kvBytesPerToken").isEqualTo(2400)
                .jsonPath("$.lanes.batched.scheme").isEqualTo("bf16");
    }

    @Test
    void readinessIsUpOnceTheModelIsLoadedAndOnlyFourEndpointsAreExposed() {
        http.get().uri("/actuator/health/readiness").exchange().expectStatus().isOk().expectBody()
                .jsonPath("$.status").isEqualTo("UP");
        http.get().uri("/actuator/health/liveness").exchange().expectStatus().isOk().expectBody()
                .jsonPath("$.status").isEqualTo("UP");
        http.get().uri("/actuator/metrics/tqserve.kv.bytes.per.token").exchange().expectStatus().isOk().expectBody()
                .jsonPath("$.measurements[0].value").isEqualTo(8544.0);
        for (String hidden : new String[] {"/actuator/env", "/actuator/beans", "/actuator/configprops",
                "/actuator/loggers", "/actuator/threaddump", "/actuator/heapdump", "/actuator/shutdown"}) {
            http.get().uri(hidden).exchange().expectStatus().isNotFound().expectBody().jsonPath("$.error").exists();
        }
    }

    @Test
    void modelsListsTheServedModel() {
        http.get().uri("/v1/models").exchange().expectStatus().isOk().expectBody()
                .jsonPath("$.object").isEqualTo("list")
                .jsonPath("$.data[0].id").isEqualTo("tiny-llama-h128")
                .jsonPath("$.data[0].object").isEqualTo("model")
                .jsonPath("$.data[0].max_model_len").isEqualTo(2048);
    }

    @Test
    void tokenizeAndDetokenizeRoundTrip() {
        byte[] body = http.post().uri("/tokenize").contentType(MediaType.APPLICATION_JSON)
                .bodyValue("{\"prompt\":\"The ls command\"}").exchange().expectStatus().isOk()
                .expectBody().jsonPath("$.count").isEqualTo(3).returnResult().getResponseBody();
        String tokens = new String(body).replaceAll(".*\"tokens\":(\\[[^]]*]).*", "$1");
        http.post().uri("/detokenize").contentType(MediaType.APPLICATION_JSON)
                .bodyValue("{\"tokens\":" + tokens + "}").exchange().expectStatus().isOk().expectBody()
                .jsonPath("$.prompt").isEqualTo("The ls command");
    }

    WebTestClient.BodyContentSpec post(String path, String json, int status) {
        return http.post().uri(path).contentType(MediaType.APPLICATION_JSON).bodyValue(json).exchange()
                .expectStatus().isEqualTo(status).expectBody();
    }

    @Test
    void outOfRangeValuesAre400WithTheParamNamed() {
        String[][] cases = {
            {"/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"temperature\":-0.5}",
                "temperature"},
            {"/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"top_p\":1.5}", "top_p"},
            {"/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":0}",
                "max_tokens"},
            {"/v1/chat/completions", "{\"messages\":[{\"role\":\"wizard\",\"content\":\"hi\"}]}", "messages[0].role"},
            {"/v1/chat/completions", "{\"messages\":[]}", "messages"},
            {"/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}",
                "messages[0].content[0]"},
            {"/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":4000}", "max_tokens"},
            {"/v1/completions", "{\"prompt\":\"x\",\"suffix\":\"y\"}", "suffix"},
            {"/v1/completions", "{\"prompt\":\"x\",\"stop\":[1,2]}", "stop"},
            {"/v1/completions", "{\"prompt\":\"x\",\"logit_bias\":{\"99999\":1}}", "logit_bias"},
            {"/v1/completions", "{\"prompt\":\"x\",\"tqserve_lane\":\"fast\"}", "tqserve_lane"},
            {"/v1/completions", "{\"prompt\":\"x\",\"n\":0}", "n"},
            {"/v1/completions", "{\"max_tokens\":3}", "prompt"},
        };
        for (String[] c : cases) {
            post(c[0], c[1], 400).jsonPath("$.error.param").isEqualTo(c[2])
                    .jsonPath("$.error.type").isEqualTo("invalid_request_error")
                    .jsonPath("$.error.message").isNotEmpty();
        }
    }

    @Test
    void malformedJsonIs400NotA500() {
        for (String bad : new String[] {"{\"prompt\":", "not json", "", "[1,2]", "{\"prompt\":\"x\",}",
                "{\"prompt\":\"x\",\"temperature\":NaN}"}) {
            post("/v1/completions", bad, 400).jsonPath("$.error.type").isEqualTo("invalid_request_error")
                    .jsonPath("$.error.param").doesNotExist();
        }
    }

    @Test
    void unknownPathsAnswerWithAnOpenAiErrorBody() {
        http.get().uri("/v1/nope").exchange().expectStatus().isNotFound().expectBody()
                .jsonPath("$.error.message").isEqualTo("Invalid URL (GET /v1/nope)")
                .jsonPath("$.error.type").isEqualTo("invalid_request_error");
    }

    @Test
    void shortRequestRunsOnTheBatchedLaneAndSaysSo() {
        http.post().uri("/v1/completions").contentType(MediaType.APPLICATION_JSON)
                .bodyValue("{\"prompt\":\"The ls command\",\"max_tokens\":4,\"temperature\":0}").exchange()
                .expectStatus().isOk()
                .expectHeader().valueEquals("X-Tqserve-Lane", "batched")
                .expectHeader().valueEquals("X-Tqserve-Route-Reason", "short-context")
                .expectBody().jsonPath("$.usage.prompt_tokens").isEqualTo(3)
                .jsonPath("$.usage.completion_tokens").isEqualTo(4)
                .jsonPath("$.choices[0].finish_reason").isEqualTo("length");
    }
}
