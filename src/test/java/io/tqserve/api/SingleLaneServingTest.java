package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.MeterRegistry;
import io.tqserve.config.TqserveApplication;
import io.tqserve.engine.BatchedBf16Lane;
import io.tqserve.engine.FinishReason;
import io.tqserve.engine.Lane;
import io.tqserve.engine.StepHook;
import io.tqserve.routing.ServingRuntime;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * Only the batched lane enabled; keep-alive comments every 100 ms of silence. Routing says only-lane; a silent
 * prefill gets keep-alive comments; a client that disconnects mid-stream stops its sequence within one step and
 * its KV memory is freed.
 */
@SpringBootTest(classes = {TqserveApplication.class, LaneProbe.class},
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"tqserve.lanes.turbo.enabled=false", "tqserve.api.keep-alive-interval=100ms"})
class SingleLaneServingTest {
    @LocalServerPort
    int port;
    @Autowired
    ServingRuntime runtime;
    @Autowired
    MeterRegistry registry;
    @Autowired
    LaneProbe.Recorder probe;
    final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    @BeforeEach
    void awaitModel() throws Exception {
        runtime.whenLoaded().get(60, TimeUnit.SECONDS);
    }

    @AfterEach
    void clearHook() {
        lane().setStepHook(StepHook.NONE);
    }

    BatchedBf16Lane lane() {
        return (BatchedBf16Lane) runtime.lane(Lane.Kind.BATCHED).orElseThrow();
    }

    HttpRequest request(String json, String... headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/v1/completions"))
                .header("Content-Type", "application/json").timeout(Duration.ofSeconds(120))
                .POST(HttpRequest.BodyPublishers.ofString(json));
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return b.build();
    }

    double counter(String name, String... tags) {
        var c = registry.find(name).tags(tags).counter();
        return c == null ? 0 : c.count();
    }

    @Test
    void everyRequestGoesToTheOnlyLaneEvenWhenAnotherIsAskedFor() throws Exception {
        double before = counter("tqserve.routing.decisions", "lane", "batched", "reason", "only-lane");
        for (String[] headers : new String[][] {{}, {"X-Tqserve-Lane", "turbo"}}) {
            HttpResponse<String> r = client.send(request("{\"prompt\":\"The ls command\",\"max_tokens\":4}",
                    headers), HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.headers().firstValue("X-Tqserve-Lane")).hasValue("batched");
            assertThat(r.headers().firstValue("X-Tqserve-Route-Reason")).hasValue("only-lane");
        }
        assertThat(counter("tqserve.routing.decisions", "lane", "batched", "reason", "only-lane"))
                .isEqualTo(before + 2);
    }

    @Test
    void silentPrefillGetsKeepAliveCommentsThenTheStream() throws Exception {
        CountDownLatch sawKeepAlive = new CountDownLatch(1);
        lane().setStepHook((request, generated) -> {
            if (request.params().maxTokens() == 7 && generated == 0) {
                try {
                    sawKeepAlive.await(60, TimeUnit.SECONDS); // the first token waits until the client saw a comment
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        HttpResponse<Stream<String>> r = client.send(request("{\"prompt\":\"The ls command\",\"max_tokens\":7,"
                + "\"temperature\":0,\"stream\":true}"), HttpResponse.BodyHandlers.ofLines());
        List<String> lines = new ArrayList<>();
        try (Stream<String> s = r.body()) {
            s.forEach(line -> {
                lines.add(line);
                if (line.equals(": keep-alive")) {
                    sawKeepAlive.countDown();
                }
            });
        }
        assertThat(lines.get(0)).isEqualTo(": keep-alive");
        List<String> data = lines.stream().filter(l -> l.startsWith("data: ")).toList();
        assertThat(data).hasSize(9).last().isEqualTo("data: [DONE]");
        assertThat(lines.stream().filter(l -> !l.isEmpty() && !l.startsWith("data: "))).allMatch(": keep-alive"::equals);
        assertThat(lines.indexOf("data: [DONE]")).isEqualTo(lines.size() - 2);
    }

    /**
     * The lane is held just before the 4th token of a 500-token stream; the client closes its socket; once the
     * server saw the disconnect the lane is let go: it finishes that one step, never samples for the sequence
     * again, and frees its KV memory.
     */
    @Test
    void clientDisconnectStopsTheSequenceWithinOneStepAndFreesItsKv() throws Exception {
        CountDownLatch atFourthToken = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        AtomicInteger maxStep = new AtomicInteger(-1);
        lane().setStepHook((request, generated) -> {
            if (request.params().maxTokens() == 500) {
                maxStep.accumulateAndGet(generated, Math::max);
                if (generated == 3) {
                    atFourthToken.countDown();
                    try {
                        letGo.await(60, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            }
        });
        double cancelledBefore = counter("tqserve.requests.finished", "lane", "batched", "finish_reason", "cancelled");
        int responsesBefore = probe.completedResponses();
        String body = "{\"prompt\":[5,6,7,8,9,10,11],\"max_tokens\":500,\"ignore_eos\":true,\"stream\":true}";
        try (Socket socket = new Socket("localhost", port)) {
            OutputStream out = socket.getOutputStream();
            out.write(("POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + body.length() + "\r\n\r\n" + body).getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            assertThat(reader.readLine()).isEqualTo("HTTP/1.1 200 OK");
            assertThat(atFourthToken.await(60, TimeUnit.SECONDS)).isTrue();
            assertThat(lane().kvBytesUsed()).isPositive();
        } // the client goes away mid-stream
        probe.awaitCompletedResponses(responsesBefore + 1); // the server saw the disconnect and cancelled
        letGo.countDown();
        List<LaneProbe.Ended> ended = probe.awaitEnded(e -> e.promptTokens() == 7 && e.lane() == Lane.Kind.BATCHED, 1);
        assertThat(ended.get(0).reason()).isEqualTo(FinishReason.CANCELLED);
        assertThat(ended.get(0).completionTokens()).isEqualTo(4);
        assertThat(maxStep.get()).as("no sampling step after the one in flight").isEqualTo(3);
        assertThat(lane().kvBytesUsed()).isZero();
        assertThat(lane().kvBytesReserved()).isZero();
        assertThat(registry.get("tqserve.kv.bytes.used").tag("lane", "batched").gauge().value()).isZero();
        assertThat(counter("tqserve.requests.finished", "lane", "batched", "finish_reason", "cancelled"))
                .isEqualTo(cancelledBefore + 1);
    }
}
