package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.config.TqserveApplication;
import io.tqserve.routing.ServingRuntime;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** POST/GET/DELETE /v1/kv/snapshots and a completion continuing from a snapshot exactly as if never stopped. */
@SpringBootTest(classes = TqserveApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"tqserve.lanes.turbo.enabled=false", "tqserve.prompt-cache.enabled=false"})
class SnapshotApiTest {
    static Path store;

    @DynamicPropertySource
    static void storeDir(DynamicPropertyRegistry r) throws Exception {
        store = Files.createTempDirectory("tqserve-snapshots");
        r.add("tqserve.store.dir", () -> store.toString());
    }

    @LocalServerPort
    int port;
    @Autowired
    ServingRuntime runtime;
    final HttpClient client = HttpClient.newHttpClient();

    HttpResponse<String> send(String method, String path, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                .header("Content-Type", "application/json");
        b = body == null ? b.method(method, HttpRequest.BodyPublishers.noBody())
                : b.method(method, HttpRequest.BodyPublishers.ofString(body));
        return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    static JsonNode json(HttpResponse<String> r) {
        return JsonMapper.shared().readTree(r.body());
    }

    @Test
    void snapshotThenContinueEqualsOneUninterruptedCompletion() throws Exception {
        runtime.whenLoaded().get(60, TimeUnit.SECONDS);
        String prompt = "The quick brown fox";
        HttpResponse<String> plain = send("POST", "/v1/completions",
                "{\"prompt\":\"" + prompt + "\",\"max_tokens\":12,\"temperature\":0}");
        assertThat(plain.statusCode()).as(plain.body()).isEqualTo(200);

        HttpResponse<String> created = send("POST", "/v1/kv/snapshots", "{\"prompt\":\"" + prompt + "\"}");
        assertThat(created.statusCode()).as(created.body()).isEqualTo(200);
        JsonNode snap = json(created);
        String id = snap.path("id").asString();
        assertThat(id).matches("[0-9a-f]{32}");
        assertThat(snap.path("tokens").asInt()).isEqualTo(9);
        assertThat(snap.path("lane").asString()).isEqualTo("batched");
        assertThat(snap.path("scheme").asString()).isEqualTo("bf16");
        assertThat(snap.path("bytes").asLong()).isGreaterThan(9L * 6144);

        JsonNode listed = json(send("GET", "/v1/kv/snapshots", null));
        assertThat(listed.path("data").get(0).path("id").asString()).isEqualTo(id);

        HttpResponse<String> cont = send("POST", "/v1/completions",
                "{\"prompt\":\"\",\"tqserve_kv_snapshot\":\"" + id + "\",\"max_tokens\":12,\"temperature\":0}");
        assertThat(cont.statusCode()).as(cont.body()).isEqualTo(200);
        assertThat(json(cont).path("choices").get(0).path("text").asString())
                .isEqualTo(json(plain).path("choices").get(0).path("text").asString());
        assertThat(json(cont).path("usage").path("prompt_tokens_details").path("cached_tokens").asInt()).isEqualTo(9);

        assertThat(send("DELETE", "/v1/kv/snapshots/" + id, null).statusCode()).isEqualTo(200);
        assertThat(send("DELETE", "/v1/kv/snapshots/" + id, null).statusCode()).isEqualTo(404);
        assertThat(json(send("GET", "/v1/kv/snapshots", null)).path("data").size()).isZero();
    }

    @Test
    void unknownAndPathLikeSnapshotIdsAre404WithAnOpenAiBody() throws Exception {
        runtime.whenLoaded().get(60, TimeUnit.SECONDS);
        HttpResponse<String> r = send("POST", "/v1/completions",
                "{\"prompt\":\"x\",\"tqserve_kv_snapshot\":\"../../../etc/passwd\",\"max_tokens\":2}");
        assertThat(r.statusCode()).isEqualTo(404);
        assertThat(json(r).path("error").path("param").asString()).isEqualTo("tqserve_kv_snapshot");
        // an encoded slash never reaches the handler: the request firewall refuses it
        assertThat(send("DELETE", "/v1/kv/snapshots/..%2F..%2Fx", null).statusCode()).isEqualTo(400);
    }
}
