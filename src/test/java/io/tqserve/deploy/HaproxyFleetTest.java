package io.tqserve.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Two replicas behind HAProxy on loopback, started by {@code deploy/haproxy/fleet.sh} with the shipped
 * {@code haproxy.cfg}, driven in order: prefix affinity with prompt-cache hits; a request refused by a full queue
 * retried on the other replica; a replica killed mid-run (requests not yet answered are retried on the survivor,
 * whose running stream completes); a draining replica (readiness down) gets nothing while its own stream completes.
 * Skipped only when HAProxy (or bash, curl) is not installed.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class HaproxyFleetTest {
    static final String REPLICA_ARGS = "--tqserve.backend.threads=1 --tqserve.backend.warmup=0"
            + " --tqserve.structured-output.warmup=0"
            + " --tqserve.lanes.turbo.kv-budget=64MB --tqserve.lanes.batched.kv-budget=64MB"
            + " --tqserve.lanes.turbo.queue-capacity=1"
            + " --tqserve.api.keep-alive-interval=1h --tqserve.api.shutdown-grace-period=90s"
            + " --spring.lifecycle.timeout-per-shutdown-phase=100s";
    static final String USAGE = "\"stream_options\":{\"include_usage\":true}";
    static final JsonMapper JSON = JsonMapper.builder().build();

    Fleet fleet;
    /** Conversation numbers by the replica that served them in the affinity test. */
    final Map<String, List<Integer>> conversationsOn = new HashMap<>();
    final ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor();

    @BeforeAll
    void up() throws Exception {
        String missing = Fleet.toolsMissing();
        Assumptions.assumeTrue(missing == null, missing);
        fleet = new Fleet(Path.of("target/haproxy-fleet-test").toAbsolutePath(), REPLICA_ARGS); // logs stay there
        fleet.script("up", "2");
        fleet.awaitStatus("r1", "UP");
        fleet.awaitStatus("r2", "UP");
    }

    @AfterAll
    void down() throws Exception {
        pool.shutdownNow();
        if (fleet != null) {
            fleet.close();
        }
    }

    /** A system prompt longer than the hashed body prefix (256 bytes), distinct per conversation from the start. */
    static String system(int conversation) {
        return "Conversation " + conversation + ". " + "You explain Unix commands briefly and precisely, one at a "
                + "time, in the style of a manual page. ".repeat(3);
    }

    static Map<String, String> message(String role, String content) {
        return Map.of("role", role, "content", content);
    }

    /** A chat body with messages first (what is hashed) and then the other fields. */
    static String chat(List<Map<String, String>> messages, String fields) {
        String m = JSON.writeValueAsString(messages);
        return "{\"messages\":" + m + ",\"temperature\":0" + (fields.isEmpty() ? "" : "," + fields) + "}";
    }

    static String opening(int conversation, String fields) {
        return chat(List.of(message("system", system(conversation)), message("user", "What does ls do?")), fields);
    }

    HttpRequest request(String body) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + fleet.port + "/v1/chat/completions"))
                .timeout(Duration.ofMinutes(5)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
    }

    HttpResponse<String> send(String body) throws Exception {
        return fleet.http.send(request(body), HttpResponse.BodyHandlers.ofString());
    }

    static String replica(HttpResponse<?> r) {
        return r.headers().firstValue("X-Tqserve-Replica").orElse("?");
    }

    @Test
    @Order(1)
    void conversationsSharingPrefixesStayOnOneReplicaAndHitItsPromptCache() throws Exception {
        List<Future<List<String>>> runs = new ArrayList<>();
        for (int c = 0; c < 20; c++) {
            int conversation = c;
            runs.add(pool.submit(() -> converse(conversation)));
        }
        try {
            checkConversations(runs);
        } finally { // a failure leaves no conversation running into the next test
            runs.forEach(f -> f.cancel(true));
        }
        assertThat(conversationsOn).as("the ring spreads conversations").containsKeys("r1", "r2");
    }

    void checkConversations(List<Future<List<String>>> runs) throws Exception {
        for (int c = 0; c < 20; c++) {
            List<String> turns = runs.get(c).get(5, TimeUnit.MINUTES); // "replica cached-tokens" per turn
            String replica = turns.get(0).split(" ")[0];
            assertThat(turns).as("conversation %d: replica and cached prompt tokens of its turns", c)
                    .hasSize(3).allMatch(t -> t.startsWith(replica + " "))
                    .satisfies(t -> assertThat(Long.parseLong(t.get(1).split(" ")[1])).isPositive())
                    .satisfies(t -> assertThat(Long.parseLong(t.get(2).split(" ")[1])).isPositive());
            conversationsOn.computeIfAbsent(replica, k -> new ArrayList<>()).add(c);
        }
    }

    /** Three turns of one conversation; returns "replica cached-prompt-tokens" of each. */
    List<String> converse(int conversation) throws Exception {
        List<Map<String, String>> messages = new ArrayList<>(List.of(message("system", system(conversation))));
        List<String> turns = new ArrayList<>();
        String[] questions = {"What does ls do?", "And tar?", "And grep?"};
        for (int turn = 0; turn < 3; turn++) {
            messages.add(message("user", questions[turn]));
            // The prompt cache is per lane: pinned to the batched lane, as auto routing would send these short
            // turns to the turbo lane whenever the batched lane has a queue (budget fallback), away from the cache.
            HttpResponse<String> r = send(chat(messages, "\"max_tokens\":4,\"tqserve_lane\":\"batched\""));
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            JsonNode body = JSON.readTree(r.body());
            long cached = body.path("usage").path("prompt_tokens_details").path("cached_tokens").asLong();
            turns.add(replica(r) + " " + cached);
            messages.add(message("assistant", body.path("choices").path(0).path("message").path("content").asString()));
        }
        return turns;
    }

    /** A conversation whose prefix the ring sends to the replica (from the affinity test, else found by asking). */
    int conversationOn(String replica) throws Exception {
        List<Integer> known = conversationsOn.get(replica);
        if (known != null && !known.isEmpty()) {
            return known.get(0);
        }
        for (int c = 100; c < 200; c++) {
            HttpResponse<String> r = send(opening(c, "\"max_tokens\":1"));
            if (replica(r).equals(replica)) {
                return c;
            }
        }
        throw new IllegalStateException("no prefix lands on " + replica);
    }

    @Test
    @Order(2)
    void aRequestRefusedByAFullQueueIsRetriedOnTheOtherReplica() throws Exception {
        int c = conversationOn("r2");
        String longTurbo = opening(c, "\"max_tokens\":400,\"ignore_eos\":true,\"stream\":true,\"tqserve_lane\":\"turbo\","
                + USAGE);
        SseStream running = SseStream.open(fleet, "running", request(longTurbo), pool);
        running.awaitStarted();
        SseStream queued = SseStream.open(fleet, "queued", request(longTurbo), pool);
        awaitMetric(fleet.replicaPort(2), "tqserve_server_requests_waiting 1.0");
        long redispatched = fleet.counter("r2", "wredis");

        // r2's turbo queue (capacity 1) is full: it answers 503 queue_full, HAProxy sends the request to r1.
        HttpResponse<String> r = send(opening(c, "\"max_tokens\":4,\"tqserve_lane\":\"turbo\""));
        assertThat(r.statusCode()).as("%s from %s", r.body(), replica(r)).isEqualTo(200);
        assertThat(replica(r)).isEqualTo("r1");
        assertThat(fleet.counter("r2", "wredis")).isEqualTo(redispatched + 1);

        for (SseStream s : List.of(running, queued)) {
            SseStream.Result result = s.result();
            assertThat(result.replica()).isEqualTo("r2");
            assertThat(result.completed()).as("stream ended with [DONE]").isTrue();
            assertThat(result.completionTokens()).isEqualTo(400);
        }
    }

    void awaitMetric(int port, String line) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        HttpRequest scrape = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/actuator/prometheus"))
                .build();
        while (!fleet.http.send(scrape, HttpResponse.BodyHandlers.ofString()).body().contains("\n" + line + "\n")) {
            assertThat(System.nanoTime()).as("waiting for %s", line).isLessThan(deadline);
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
        }
    }

    /** Polls a replica directly until the path answers the status (the replica acts on a signal on its own time). */
    void awaitStatus(int port, String path, int status) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        HttpRequest get = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build();
        while (fleet.http.send(get, HttpResponse.BodyHandlers.discarding()).statusCode() != status) {
            assertThat(System.nanoTime()).as("waiting for %s to answer %d", path, status).isLessThan(deadline);
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
        }
    }

    /** Short requests with conversation c's prefix: all must be answered in full; returns who answered. */
    List<String> shortRequests(int c, int n) throws Exception {
        List<String> servedBy = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            boolean stream = i % 2 == 1;
            String body = opening(c, "\"max_tokens\":4" + (stream ? ",\"stream\":true" : ""));
            HttpResponse<String> r = send(body);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            if (stream) {
                assertThat(r.body()).endsWith("data: [DONE]\n\n");
            } else {
                assertThat(JSON.readTree(r.body()).path("usage").path("completion_tokens").asInt()).isEqualTo(4);
            }
            servedBy.add(replica(r));
        }
        return servedBy;
    }

    @Test
    @Order(3)
    void killingAReplicaLosesNoRequestThatHadNotStartedAndStreamsOnTheSurvivorComplete() throws Exception {
        int onR1 = conversationOn("r1");
        int onR2 = conversationOn("r2");
        String longFields = "\"max_tokens\":1200,\"ignore_eos\":true,\"stream\":true," + USAGE;
        // the victim first: the survivor starts only once the victim runs, so it still has most of its tokens to go
        // when the kill lands (opened together with 600 tokens each, the survivor had streamed 598 of them while
        // r1's stream was starting)
        SseStream victim = SseStream.open(fleet, "victim", request(opening(onR1, longFields)), pool);
        victim.awaitStarted();
        SseStream survivor = SseStream.open(fleet, "survivor", request(opening(onR2, longFields)), pool);
        survivor.awaitStarted();

        ProcessHandle r1 = fleet.replica(1);
        r1.destroyForcibly(); // SIGKILL
        r1.onExit().get(1, TimeUnit.MINUTES);
        int chunksAtKill = survivor.contentChunks();

        // r1's prefix: connection refused (or no answer) on r1 until its health check fails, then r1 is skipped.
        assertThat(shortRequests(onR1, 10)).containsOnly("r2");
        fleet.awaitStatus("r1", "DOWN");
        assertThat(shortRequests(onR1, 2)).containsOnly("r2");

        SseStream.Result s = survivor.result();
        assertThat(s.replica()).isEqualTo("r2");
        assertThat(s.completed()).as("the survivor's stream ended with [DONE]").isTrue();
        assertThat(s.completionTokens()).isEqualTo(1200);
        assertThat(chunksAtKill).as("the survivor's stream was running when r1 died").isLessThan(s.contentChunks());
        SseStream.Result v = victim.result();
        assertThat(v.replica()).isEqualTo("r1");
        assertThat(v.completed()).as("a stream that had started on the killed replica cannot be replayed").isFalse();

        fleet.script("replica", "1");
        fleet.awaitStatus("r1", "UP");
        assertThat(shortRequests(onR1, 2)).as("r1 is back on the ring").containsOnly("r1");
    }

    @Test
    @Order(4)
    void aDrainingReplicaGetsNothingAndItsRunningStreamCompletes() throws Exception {
        int onR1 = conversationOn("r1");
        SseStream draining = SseStream.open(fleet, "draining",
                request(opening(onR1, "\"max_tokens\":600,\"ignore_eos\":true,\"stream\":true," + USAGE)), pool);
        draining.awaitStarted();

        ProcessHandle r1 = fleet.replica(1);
        r1.destroy(); // SIGTERM: readiness goes DOWN, new API requests get 503, running streams may finish
        awaitStatus(fleet.replicaPort(1), "/actuator/health/readiness", 503);
        // Until HAProxy's check sees readiness DOWN, r1 still gets its prefixes: it serves them while its lanes
        // are open, then answers 503 shutting_down, which HAProxy retries on r2. Either way each is answered in full.
        assertThat(shortRequests(onR1, 4)).hasSize(4);
        fleet.awaitStatus("r1", "DOWN");
        long chosen = fleet.counter("r1", "lbtot");
        assertThat(shortRequests(onR1, 6)).containsOnly("r2");
        assertThat(fleet.counter("r1", "lbtot")).as("requests sent to the readiness-down replica").isEqualTo(chosen);

        SseStream.Result d = draining.result();
        assertThat(d.replica()).isEqualTo("r1");
        assertThat(d.completed()).as("the draining replica's stream ended with [DONE]").isTrue();
        assertThat(d.completionTokens()).isEqualTo(600);
        r1.onExit().get(2, TimeUnit.MINUTES);
    }
}
