package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.cli.Http1Client;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The findings of the second hardening round, one by one, over raw sockets: each malformed request gets its 4xx
 * (or 501/505) with an OpenAI error body of the stated type and code, nothing is logged at ERROR or with a stack
 * trace, no 5xx is counted by {@code http.server.requests}, and no request reaches a lane.
 */
class MalformedHttpTest extends HardenedServingContext {
    static final String BODY = "{\"prompt\":\"The ls command\",\"max_tokens\":2}";
    static final List<String> POSTS = List.of("/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize",
            "/v1/kv/snapshots");

    LogEvents logs;
    double serverErrors;
    double routed;

    @BeforeEach
    void watch() {
        logs = new LogEvents();
        serverErrors = serverErrorsSoFar();
        routed = routedSoFar();
    }

    @AfterEach
    void nothingLoggedOrCounted() {
        try {
            assertThat(logs.errorsOrStacks()).as("ERROR lines or stack traces logged").isEmpty();
            assertThat(serverErrorsSoFar()).as("5xx counted").isEqualTo(serverErrors);
            assertThat(routedSoFar()).as("requests that reached a lane").isEqualTo(routed);
        } finally {
            logs.close();
        }
    }

    /** One request on a fresh connection. */
    Http1Client.Response exchange(byte[] request) throws IOException {
        try (Http1Client http = new Http1Client("localhost", port, 30_000)) {
            return http.exchange(request);
        }
    }

    /** Raw request head lines (CRLF added) and body bytes. */
    static byte[] raw(String head, String body) {
        return (head.replace("\n", "\r\n") + "\r\n" + body).getBytes(StandardCharsets.ISO_8859_1);
    }

    static void assertError(Http1Client.Response r, int status, String type, String code) {
        assertThat(r.status()).as(r.text()).isEqualTo(status);
        assertThat(r.header("content-type")).startsWith("application/json");
        assertThat(r.text()).startsWith("{\"error\":{\"message\":\"").contains("\"type\":\"" + type + "\"")
                .contains("\"code\":\"" + code + "\"");
    }

    @Test
    void aWrongOrUnparsableContentTypeIsA415OnEveryPostEndpoint() throws IOException {
        String[][] types = {{"Content-Type", "garbage"}, {"Content-Type", "application/json; charset=x-bogus"},
            {"Content-Type", "application/json; charset=\"utf-8"}, {"Content-Type", "text/plain"},
            {"Content-Type", "application/x-www-form-urlencoded"}, {"Content-Type", "multipart/form-data; boundary=x"},
            {"Content-Type", "application/json; charset=iso-8859-1"}, {"Content-Type", "application/jsonx"}, {},
            {"Content-Type", "application/json", "Content-Type", "text/plain"}};
        for (String path : POSTS) {
            for (String[] t : types) {
                String[] headers = new String[t.length + 2];
                headers[0] = "Authorization";
                headers[1] = "Bearer " + KEY;
                System.arraycopy(t, 0, headers, 2, t.length);
                Http1Client.Response r = exchange(Http1Client.request("POST", path,
                        BODY.getBytes(StandardCharsets.UTF_8), headers));
                assertError(r, 415, "invalid_request_error", "unsupported_media_type");
                assertThat(r.text()).doesNotContain("x-bogus").doesNotContain("iso-8859-1\"");
            }
        }
        // what the SDKs send is accepted
        for (String ok : List.of("application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8")) {
            assertThat(exchange(Http1Client.request("POST", "/tokenize", BODY.getBytes(StandardCharsets.UTF_8),
                    "Authorization", "Bearer " + KEY, "Content-Type", ok)).status()).isEqualTo(200);
        }
    }

    @Test
    void encodedSlashesAndDotsInTheOpenHealthPathAreA400WithoutAKey() throws IOException {
        for (String path : List.of("/actuator/health/x%2fy", "/actuator/health/..%2fprometheus",
                "/actuator/health/liveness%2fx", "/actuator/health/x%2Fy", "/actuator/health/%2e%2e/prometheus",
                "/actuator/health/x%5cy", "/actuator/health/x%00", "/actuator/health//liveness",
                "/actuator/health/x;y", "/v1/models/..%2f..%2factuator")) {
            assertError(exchange(raw("GET " + path + " HTTP/1.1\nHost: localhost\n", "")), 400,
                    "invalid_request_error", "request_rejected");
        }
        assertThat(exchange(raw("GET /actuator/health/liveness HTTP/1.1\nHost: localhost\n", "")).status())
                .isEqualTo(200);
        assertThat(exchange(raw("GET /actuator/health/nosuchgroup HTTP/1.1\nHost: localhost\n", "")).status())
                .isEqualTo(404);
    }

    @Test
    void aBadChunkSizeIsA400NotRecordedAsA500() throws IOException {
        for (String size : List.of("zz", "-1", "0x10", "ffffffffffffffffff")) {
            Http1Client.Response r = exchange(raw("POST /v1/completions HTTP/1.1\nHost: localhost\nAuthorization: Bearer "
                    + KEY + "\nContent-Type: application/json\nTransfer-Encoding: chunked\n", size + "\r\n"
                    + BODY + "\r\n0\r\n\r\n"));
            assertThat(r.status()).as(size).isEqualTo(400);
            assertThat(r.header("connection")).isEqualTo("close");
        }
    }

    @Test
    void framingThatRfc9112RefusesIsRefused() throws IOException {
        String auth = "Authorization: Bearer " + KEY + "\nContent-Type: application/json\n";
        String len = "Content-Length: " + BODY.length() + "\n";
        // an unknown transfer coding beside a Content-Length: a proxy may frame by either
        assertError(exchange(raw("POST /v1/completions HTTP/1.1\nHost: localhost\n" + auth
                + "Transfer-Encoding: xchunked\n" + len, BODY)), 400, "invalid_request_error", "invalid_framing");
        assertError(exchange(raw("POST /v1/completions HTTP/1.1\nHost: localhost\n" + auth
                + "Transfer-Encoding: gzip, chunked\n", "0\r\n\r\n")), 501, "invalid_request_error",
                "unsupported_transfer_coding");
        assertError(exchange(raw("POST /v1/completions HTTP/1.1\nHost: localhost\n" + auth
                + "Transfer-Encoding: xchunked\n", "0\r\n\r\n")), 501, "invalid_request_error",
                "unsupported_transfer_coding");
        assertError(exchange(raw("POST /v1/completions HTTP/1.1\nHost: localhost\n" + auth
                + "Transfer-Encoding: chunked, chunked\n", "0\r\n\r\n")), 400, "invalid_request_error",
                "invalid_framing");
        // Transfer-Encoding in HTTP/1.0: Netty's decoder refuses it already (400, empty body)
        assertThat(exchange(raw("POST /v1/completions HTTP/1.0\nHost: localhost\n" + auth
                + "Transfer-Encoding: chunked\n", "0\r\n\r\n")).status()).isEqualTo(400);
        // Host missing or given twice
        assertError(exchange(raw("POST /v1/completions HTTP/1.1\n" + auth + len, BODY)), 400,
                "invalid_request_error", "invalid_framing");
        assertError(exchange(raw("GET /v1/models HTTP/1.1\nHost: a\nHost: b\nAuthorization: Bearer " + KEY + "\n",
                "")), 400, "invalid_request_error", "invalid_framing");
        // HTTP/1.0 needs no Host
        assertThat(exchange(raw("GET /v1/models HTTP/1.0\nAuthorization: Bearer " + KEY + "\n", "")).status())
                .isEqualTo(200);
        // chunked with a Content-Length, and two Content-Lengths: Netty's own refusal (400, empty body)
        assertThat(exchange(raw("POST /v1/completions HTTP/1.1\nHost: localhost\n" + auth
                + "Transfer-Encoding: chunked\nContent-Length: 5\n", "0\r\n\r\n")).status()).isEqualTo(400);
        assertThat(exchange(raw("POST /v1/completions HTTP/1.1\nHost: localhost\n" + auth + len
                + "Content-Length: 3\n", BODY)).status()).isEqualTo(400);
    }

    @Test
    void aHostNotAllowedIsA400AndAllowedOnesPass() throws IOException {
        for (String host : List.of("evil.example", "localhost.evil.example", "127.0.0.2", "[::2]:80")) {
            assertError(exchange(raw("GET /v1/models HTTP/1.1\nHost: " + host + "\nAuthorization: Bearer " + KEY + "\n",
                    "")), 400, "invalid_request_error", "invalid_host");
        }
        for (String host : List.of("localhost", "LOCALHOST:8080", "127.0.0.1:1", "[::1]:8080")) {
            assertThat(exchange(raw("GET /v1/models HTTP/1.1\nHost: " + host + "\nAuthorization: Bearer " + KEY
                    + "\n", "")).status()).as(host).isEqualTo(200);
        }
    }

    @Test
    void foldedHeadersAndChunkSizesWithWhiteSpaceAreRefused() throws IOException {
        String auth = "Authorization: Bearer " + KEY + "\nContent-Type: application/json\n";
        for (String fold : List.of("X-A: a\n b\n", "X-A: a\n\tb\n")) {
            assertError(exchange(raw("POST /v1/completions HTTP/1.1\nHost: localhost\n" + auth + fold
                    + "Content-Length: " + BODY.length() + "\n", BODY)), 400, "invalid_request_error", "invalid_framing");
        }
        for (String size : List.of(" e", "\te", "+e", "0x5")) {
            Http1Client.Response r = exchange(raw("POST /tokenize HTTP/1.1\nHost: localhost\n" + auth
                    + "Transfer-Encoding: chunked\n", "5\r\n{\"pro\r\n" + size + "\r\nmpt\":\"The ls\"}\r\n0\r\n\r\n"));
            assertThat(r.status()).as(size).isEqualTo(400);
            assertThat(r.header("connection")).isEqualTo("close");
        }
        // the same body with plain sizes is fine
        assertThat(exchange(raw("POST /tokenize HTTP/1.1\nHost: localhost\n" + auth + "Transfer-Encoding: chunked\n",
                "5\r\n{\"pro\r\ne\r\nmpt\":\"The ls\"}\r\n0\r\n\r\n")).status()).isEqualTo(200);
    }

    @Test
    void anUnknownHttpVersionIsA505InHttp11NotEchoed() throws IOException {
        for (String version : List.of("HTTP/9.9", "HTTP/1.2", "HTTP/2.5")) {
            try (Socket s = new Socket("localhost", port)) {
                s.setSoTimeout(30_000);
                s.getOutputStream().write(raw("GET /v1/models " + version + "\nHost: localhost\n", ""));
                String all = new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
                assertThat(all).as(version).startsWith("HTTP/1.1 505 ").contains("Connection: close")
                        .contains("\"code\":\"http_version_not_supported\"");
            }
        }
    }

    @Test
    void aHalfClosedRequestIsClosedCleanly() throws IOException {
        for (String body : List.of(BODY, BODY.substring(0, 10))) {
            try (Socket s = new Socket("localhost", port)) {
                s.setSoTimeout(30_000);
                s.getOutputStream().write(raw("POST /v1/completions HTTP/1.1\nHost: localhost\nAuthorization: Bearer "
                        + KEY + "\nContent-Type: application/json\nContent-Length: " + BODY.length() + "\n", body));
                s.shutdownOutput();
                InputStream in = s.getInputStream();
                byte[] answer = in.readAllBytes(); // ends: the server closes, it does not hang
                String text = new String(answer, StandardCharsets.ISO_8859_1);
                assertThat(text.isEmpty() || text.startsWith("HTTP/1.1 ")).as(text).isTrue();
            }
        }
        // the complete request may have been routed before the server saw the half-close (it is then cancelled)
        routed = routedSoFar();
    }
}
