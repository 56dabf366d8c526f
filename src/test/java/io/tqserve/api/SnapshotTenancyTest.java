package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.config.TqserveApplication;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * KV snapshots with two API keys and quotas: a key sees, continues from and deletes only its own snapshots; the
 * count quota per key and in total is a 429 {@code insufficient_quota} before any prefill; a damaged snapshot is a
 * 409 whose message names no path; a directory or a symbolic link where a snapshot file would be is "not found".
 * No 5xx, no ERROR log.
 */
@SpringBootTest(classes = {TqserveApplication.class, LaneProbe.class},
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "tqserve.lanes.turbo.enabled=false",
            "tqserve.api.keys=" + SnapshotTenancyTest.A + "," + SnapshotTenancyTest.B,
            "tqserve.store.snapshots.max-count-per-key=2",
            "tqserve.store.snapshots.max-count=3"
        })
class SnapshotTenancyTest extends ServingClient {
    static final String A = "tenant-a-key";
    static final String B = "tenant-b-key";
    static Path store;

    @DynamicPropertySource
    static void storeDir(DynamicPropertyRegistry r) throws IOException {
        store = Files.createTempDirectory("tqserve-tenancy");
        r.add("tqserve.store.dir", () -> store.toString());
    }

    HttpResponse<String> send(String key, String method, String path, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(baseUrl() + path)).timeout(Duration.ofSeconds(60))
                .header("Authorization", "Bearer " + key).header("Content-Type", "application/json");
        b = body == null ? b.method(method, HttpRequest.BodyPublishers.noBody())
                : b.method(method, HttpRequest.BodyPublishers.ofString(body));
        return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    static JsonNode json(HttpResponse<String> r) {
        return JsonMapper.shared().readTree(r.body());
    }

    String snapshot(String key, String prompt) throws Exception {
        HttpResponse<String> r = send(key, "POST", "/v1/kv/snapshots", "{\"prompt\":\"" + prompt + "\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return json(r).path("id").asString();
    }

    static void assertError(HttpResponse<String> r, int status, String type, String code) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        JsonNode e = json(r).path("error");
        assertThat(e.path("type").asString()).isEqualTo(type);
        assertThat(e.path("code").asString()).isEqualTo(code);
        assertThat(r.body()).doesNotContain(store.toString()).doesNotContain(".tqkv").doesNotContain("/tmp");
    }

    HttpResponse<String> continueFrom(String key, String id) throws Exception {
        return send(key, "POST", "/v1/completions", "{\"prompt\":\" more\",\"tqserve_kv_snapshot\":\"" + id
                + "\",\"max_tokens\":2,\"temperature\":0}");
    }

    @Test
    void snapshotsAreOwnedByTheirKeyCountedAgainstQuotasAndNeverRevealPaths() throws Exception {
        double serverErrors = serverErrorsSoFar();
        try (LogEvents logs = new LogEvents()) {
            String a1 = snapshot(A, "The quick brown fox");
            String a2 = snapshot(A, "The ls command");
            // B sees nothing of A's, cannot continue from or delete them
            assertThat(json(send(B, "GET", "/v1/kv/snapshots", null)).path("data").size()).isZero();
            assertError(continueFrom(B, a1), 404, "invalid_request_error", "snapshot_not_found");
            assertError(send(B, "DELETE", "/v1/kv/snapshots/" + a1, null), 404, "invalid_request_error",
                    "snapshot_not_found");
            assertThat(continueFrom(A, a1).statusCode()).isEqualTo(200);
            assertThat(json(send(A, "GET", "/v1/kv/snapshots", null)).path("data").size()).isEqualTo(2);

            // per-key count quota (2), then the total (3)
            assertError(send(A, "POST", "/v1/kv/snapshots", "{\"prompt\":\"one too many\"}"), 429,
                    "insufficient_quota", "snapshot_quota_exceeded");
            snapshot(B, "The quick brown fox");
            assertError(send(B, "POST", "/v1/kv/snapshots", "{\"prompt\":\"past the total\"}"), 429,
                    "insufficient_quota", "snapshot_quota_exceeded");
            assertThat(send(A, "DELETE", "/v1/kv/snapshots/" + a2, null).statusCode()).isEqualTo(200);
            String b2 = snapshot(B, "room again");

            // a damaged snapshot: 409 naming what is wrong, not where
            Path b2File;
            try (Stream<Path> files = Files.walk(store)) {
                b2File = files.filter(p -> p.getFileName().toString().equals(b2 + ".tqkv")).findFirst().orElseThrow();
            }
            byte[] bytes = Files.readAllBytes(b2File);
            bytes[bytes.length / 2] ^= 0x5a;
            Files.write(b2File, bytes);
            assertError(continueFrom(B, b2), 409, "invalid_request_error", "snapshot_checksum");

            // a directory, then a symbolic link, where a snapshot file would be: not found
            Files.delete(b2File);
            Files.createDirectory(b2File);
            assertError(continueFrom(B, b2), 404, "invalid_request_error", "snapshot_not_found");
            assertError(send(B, "DELETE", "/v1/kv/snapshots/" + b2, null), 404, "invalid_request_error",
                    "snapshot_not_found");
            Files.delete(b2File);
            Path a1File;
            try (Stream<Path> files = Files.walk(store)) {
                a1File = files.filter(p -> p.getFileName().toString().equals(a1 + ".tqkv")).findFirst().orElseThrow();
            }
            Files.createSymbolicLink(b2File, a1File);
            assertError(continueFrom(B, b2), 404, "invalid_request_error", "snapshot_not_found");
            assertThat(logs.errorsOrStacks()).isEmpty();
        }
        assertThat(serverErrorsSoFar()).as("5xx counted").isEqualTo(serverErrors);
    }
}
