package io.tqserve.api;

import io.tqserve.config.TqserveApplication;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.springframework.boot.test.context.SpringBootTest;

/**
 * One application context shared by the generation tests (Spring caches it across the subclasses): both lanes
 * on with the shipped schemes (turbo:k8v3, bf16), a long-context threshold of 16 tokens and a turbo KV budget of
 * 32 tokens (so every routing reason is reachable with tiny prompts), a turbo queue of 1.
 */
@SpringBootTest(classes = {TqserveApplication.class, LaneProbe.class},
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "tqserve.routing.long-context-threshold=16",
            "tqserve.lanes.turbo.kv-budget=" + ServingTestContext.TURBO_BUDGET_BYTES + "B",
            "tqserve.lanes.turbo.queue-capacity=1",
            "tqserve.api.keep-alive-interval=1h"
        })
abstract class ServingTestContext extends ServingClient {
    /** 32 tokens of turbo:k8v3 KV on the embedded model: 32 × 6 layers × 2 KV heads × 200 bytes. */
    static final long TURBO_BUDGET_BYTES = 32L * 2400;

    HttpResponse<String> post(String path, String json, String... headers) throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(baseUrl() + path))
                .header("Content-Type", "application/json").timeout(Duration.ofSeconds(120))
                .POST(HttpRequest.BodyPublishers.ofString(json));
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    double counter(String name, String... tags) {
        var c = registry.find(name).tags(tags).counter();
        return c == null ? 0 : c.count();
    }
}
