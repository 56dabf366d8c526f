package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpMethod;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import reactor.core.publisher.Mono;

/**
 * CORS is off unless origins are configured; then a preflight from a listed origin is answered without a key,
 * the actual request still needs its key and exposes the routing headers, and other origins get a 403 with an
 * OpenAI error body.
 */
class CorsTest extends HardenedServingContext {

    @Test
    void preflightFromTheListedOriginIsAnsweredWithoutAKey() throws Exception {
        HttpResponse<String> r = send("OPTIONS", "/v1/chat/completions", null, "Origin", ORIGIN,
                "Access-Control-Request-Method", "POST",
                "Access-Control-Request-Headers", "authorization,content-type,x-stainless-os");
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("Access-Control-Allow-Origin")).hasValue(ORIGIN);
        assertThat(r.headers().firstValue("Access-Control-Allow-Methods").orElseThrow()).contains("POST");
        assertThat(r.headers().firstValue("Access-Control-Allow-Headers").orElseThrow().toLowerCase())
                .contains("authorization").contains("content-type").contains("x-stainless-os");
        assertThat(r.headers().firstValue("Access-Control-Allow-Credentials")).isEmpty();
    }

    @Test
    void theActualRequestNeedsItsKeyAndExposesTheRoutingHeaders() throws Exception {
        String body = "{\"prompt\":\"The ls command\",\"max_tokens\":2}";
        HttpResponse<String> noKey = send("POST", "/v1/completions", body.getBytes(), "Origin", ORIGIN);
        assertThat(noKey.statusCode()).isEqualTo(401);
        assertThat(noKey.headers().firstValue("Access-Control-Allow-Origin")).hasValue(ORIGIN);
        HttpResponse<String> ok = post("/v1/completions", body, "Origin", ORIGIN);
        assertThat(ok.statusCode()).isEqualTo(200);
        assertThat(ok.headers().firstValue("Access-Control-Allow-Origin")).hasValue(ORIGIN);
        assertThat(ok.headers().firstValue("Access-Control-Expose-Headers").orElseThrow())
                .contains("X-Tqserve-Lane").contains("X-Tqserve-Route-Reason").contains("Retry-After");
    }

    @Test
    void otherOriginsAreRefusedWithAnOpenAiErrorBody() throws Exception {
        HttpResponse<String> pre = send("OPTIONS", "/v1/completions", null, "Origin", "https://evil.example",
                "Access-Control-Request-Method", "POST");
        assertThat(pre.statusCode()).isEqualTo(403);
        assertThat(pre.headers().firstValue("Access-Control-Allow-Origin")).isEmpty();
        assertThat(pre.body()).contains("\"code\":\"cors_rejected\"");
        double routed = routedSoFar();
        HttpResponse<String> actual = post("/v1/completions", "{\"prompt\":\"x\",\"max_tokens\":1}", "Origin",
                "https://evil.example");
        assertThat(actual.statusCode()).isEqualTo(403);
        assertThat(actual.body()).contains("\"code\":\"cors_rejected\"");
        assertThat(routedSoFar()).as("the refused request never reached a lane").isEqualTo(routed);
    }

    @Test
    void withoutConfiguredOriginsNoCorsHeaderIsEverSent() {
        CorsFilter off = new CorsFilter(new ApiSettings(List.of(), false, 512, Duration.ofSeconds(5),
                Duration.ofSeconds(1)));
        MockServerWebExchange ex = MockServerWebExchange.from(MockServerHttpRequest.options("/v1/completions")
                .header("Origin", ORIGIN).header("Access-Control-Request-Method", "POST").build());
        AtomicBoolean passed = new AtomicBoolean();
        off.filter(ex, e -> {
            passed.set(true);
            return Mono.empty();
        }).block();
        assertThat(passed).as("the request goes on to routing (404/401), unanswered by CORS").isTrue();
        assertThat(ex.getResponse().getHeaders().getAccessControlAllowOrigin()).isNull();
        assertThat(ex.getRequest().getMethod()).isEqualTo(HttpMethod.OPTIONS);
    }
}
