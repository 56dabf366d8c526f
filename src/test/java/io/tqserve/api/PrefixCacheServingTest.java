package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.MeterRegistry;
import io.tqserve.config.TqserveApplication;
import io.tqserve.routing.ServingRuntime;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** A second request sharing a long prefix reuses its KV: usage reports cached_tokens and the metrics count a hit. */
@SpringBootTest(classes = TqserveApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"tqserve.lanes.turbo.enabled=false", "tqserve.prompt-cache.min-tokens=16"})
class PrefixCacheServingTest {
    @LocalServerPort
    int port;
    @Autowired
    ServingRuntime runtime;
    @Autowired
    MeterRegistry registry;
    final HttpClient client = HttpClient.newHttpClient();

    JsonNode complete(int[] prompt) throws Exception {
        String ids = Arrays.stream(prompt).mapToObj(Integer::toString).collect(Collectors.joining(","));
        HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/v1/completions"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":[" + ids + "],\"max_tokens\":4,\"temperature\":0}"))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return JsonMapper.shared().readTree(r.body());
    }

    @Test
    void secondRequestSharingAPrefixReportsCachedTokens() throws Exception {
        runtime.whenLoaded().get(60, TimeUnit.SECONDS);
        int[] system = IntStream.range(0, 48).map(i -> 300 + (i * 37) % 5000).toArray();
        int[] followUp = IntStream.concat(Arrays.stream(system), IntStream.of(11, 12, 13, 14, 15)).toArray();
        JsonNode first = complete(system);
        assertThat(first.path("usage").path("prompt_tokens_details").path("cached_tokens").asInt()).isZero();
        JsonNode second = complete(followUp);
        assertThat(second.path("usage").path("prompt_tokens").asInt()).isEqualTo(followUp.length);
        assertThat(second.path("usage").path("prompt_tokens_details").path("cached_tokens").asInt())
                .isEqualTo(system.length);
        assertThat(registry.get("tqserve.prefix.cache.hits").tag("lane", "batched").functionCounter().count())
                .isEqualTo(1.0);
        assertThat(registry.get("tqserve.prefix.cache.bytes").tag("lane", "batched").gauge().value()).isPositive();
        // the same prompt again: everything comes from the cache, including the next-token logits
        JsonNode again = complete(followUp);
        assertThat(again.path("usage").path("prompt_tokens_details").path("cached_tokens").asInt())
                .isEqualTo(followUp.length);
        assertThat(again.path("choices").get(0).path("text").asString())
                .isEqualTo(second.path("choices").get(0).path("text").asString());
    }
}
