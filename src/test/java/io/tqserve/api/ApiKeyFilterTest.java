package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

class ApiKeyFilterTest {
    static ApiSettings settings(List<String> keys) {
        return new ApiSettings(keys, false, 512, Duration.ofSeconds(5), Duration.ofSeconds(1));
    }

    /** Runs the filter and the error handler like the server does; returns the status and the body. */
    static String[] call(ApiKeyFilter filter, MockServerHttpRequest request) {
        MockServerWebExchange exchange = MockServerWebExchange.from(request);
        AtomicBoolean passed = new AtomicBoolean();
        WebFilterChain chain = ex -> {
            passed.set(true);
            return Mono.empty();
        };
        filter.filter(exchange, chain).onErrorResume(e -> new OpenAiErrorHandler().handle(exchange, e)).block();
        if (passed.get()) {
            return new String[] {"passed", ""};
        }
        String body = exchange.getResponse().getBodyAsString().block();
        return new String[] {String.valueOf(exchange.getResponse().getStatusCode().value()), body};
    }

    @Test
    void withoutConfiguredKeysEverythingPasses() {
        ApiKeyFilter f = new ApiKeyFilter(settings(List.of()));
        assertThat(call(f, MockServerHttpRequest.post("/v1/completions").build())[0]).isEqualTo("passed");
    }

    @Test
    void protectedPathsNeedABearerKey() {
        ApiKeyFilter f = new ApiKeyFilter(settings(List.of("k1", "secret-2")));
        for (String path : new String[] {"/v1/chat/completions", "/v1/completions", "/v1/models", "/tokenize",
                "/detokenize"}) {
            String[] missing = call(f, MockServerHttpRequest.post(path).build());
            assertThat(missing[0]).isEqualTo("401");
            assertThat(missing[1]).isEqualTo("{\"error\":{\"message\":\"missing API key: send Authorization: Bearer "
                    + "<key>\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"invalid_api_key\"}}");
            String[] wrong = call(f, MockServerHttpRequest.post(path).header("Authorization", "Bearer k2").build());
            assertThat(wrong[0]).isEqualTo("401");
            assertThat(wrong[1]).contains("invalid API key");
            assertThat(call(f, MockServerHttpRequest.post(path).header("Authorization", "Bearer secret-2").build())[0])
                    .isEqualTo("passed");
            assertThat(call(f, MockServerHttpRequest.post(path).header("Authorization", "bearer k1").build())[0])
                    .isEqualTo("passed");
        }
    }

    @Test
    void healthStaysOpenAndTheOtherActuatorEndpointsNeedTheKey() {
        ApiKeyFilter f = new ApiKeyFilter(settings(List.of("k1")));
        for (String path : new String[] {"/actuator/health", "/actuator/health/readiness",
                "/actuator/health/liveness"}) {
            assertThat(call(f, MockServerHttpRequest.get(path).build())[0]).isEqualTo("passed");
        }
        for (String path : new String[] {"/actuator/prometheus", "/actuator/info", "/actuator/metrics",
                "/actuator", "/actuator/", "/actuator/healthx", "/anything", "/v1/kv/snapshots/x"}) {
            assertThat(call(f, MockServerHttpRequest.get(path).build())[0]).as(path).isEqualTo("401");
            assertThat(call(f, MockServerHttpRequest.get(path).header("Authorization", "Bearer k1").build())[0])
                    .as(path).isEqualTo("passed");
        }
    }

    @Test
    void openActuatorEndpointsAreConfigurable() {
        ApiKeyFilter f = new ApiKeyFilter(new ApiSettings(List.of("k1"), false, 512, Duration.ofSeconds(5),
                Duration.ofSeconds(1), Duration.ofMinutes(10), Duration.ofSeconds(15), false, 1000, 1_000_000,
                List.of("health", "prometheus"), List.of()));
        assertThat(call(f, MockServerHttpRequest.get("/actuator/prometheus").build())[0]).isEqualTo("passed");
        assertThat(call(f, MockServerHttpRequest.get("/actuator/info").build())[0]).isEqualTo("401");
    }

    @Test
    void keysAreComparedAsUtf8Bytes() {
        ApiKeyFilter f = new ApiKeyFilter(settings(List.of("clé")));
        String header = "Bearer " + new String("clé".getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8);
        assertThat(call(f, MockServerHttpRequest.get("/v1/models").header("Authorization", header).build())[0])
                .isEqualTo("passed");
        assertThat(call(f, MockServerHttpRequest.get("/v1/models").header("Authorization", "Bearer cle").build())[0])
                .isEqualTo("401");
    }
}
