package io.tqserve.api;

import io.micrometer.core.instrument.Counter;
import io.tqserve.config.TqserveApplication;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.springframework.boot.test.context.SpringBootTest;

/**
 * One application context shared by the security and hardening tests (Spring caches it across the subclasses):
 * two API keys, CORS for one origin, allowed hosts localhost, 127.0.0.1 and ::1, a request timeout of 7 min, at most 8 messages and 4096 prompt characters, a
 * 64 KB body limit, the request log at DEBUG; both lanes on bf16.
 */
@SpringBootTest(classes = {TqserveApplication.class, LaneProbe.class},
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "tqserve.kv.scheme=bf16",
            "tqserve.api.keys=" + HardenedServingContext.KEY + "," + HardenedServingContext.OTHER_KEY,
            "tqserve.api.cors.allowed-origins=" + HardenedServingContext.ORIGIN,
            "tqserve.api.allowed-hosts=localhost,127.0.0.1,[::1]",
            "tqserve.api.request-timeout=7m",
            "tqserve.api.max-messages=8",
            "tqserve.api.max-prompt-chars=4096",
            "tqserve.api.keep-alive-interval=1h",
            "spring.http.codecs.max-in-memory-size=64KB",
            "logging.level.io.tqserve.api.RequestLog=debug"
        })
abstract class HardenedServingContext extends ServingClient {
    static final String KEY = "tq-test-key-0123456789";
    static final String OTHER_KEY = "second-key";
    static final String ORIGIN = "https://app.example";
    static final int BODY_LIMIT = 64 * 1024;

    HttpResponse<String> send(String method, String path, byte[] body, String... headers)
            throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(baseUrl() + path)).timeout(Duration.ofSeconds(120))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofByteArray(body));
        if (body != null) {
            b.header("Content-Type", "application/json");
        }
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** A JSON POST with the API key. */
    HttpResponse<String> post(String path, String json, String... headers) throws IOException, InterruptedException {
        String[] h = new String[headers.length + 2];
        h[0] = "Authorization";
        h[1] = "Bearer " + KEY;
        System.arraycopy(headers, 0, h, 2, headers.length);
        return send("POST", path, json.getBytes(java.nio.charset.StandardCharsets.UTF_8), h);
    }

    /** Requests the routing service has decided, over all lanes and reasons: a request that reached a lane. */
    double routedSoFar() {
        return registry.find("tqserve.routing.decisions").counters().stream().mapToDouble(Counter::count).sum();
    }

    /** Sequences that left any lane so far. */
    double finishedSoFar() {
        return registry.find("tqserve.requests.finished").counters().stream().mapToDouble(Counter::count).sum();
    }
}
