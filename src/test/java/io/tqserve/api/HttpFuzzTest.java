package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.cli.Http1Client;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * 10,000 malformed or hostile requests ({@link HostileRequests}, seeded: the same requests every run), sent over
 * four keep-alive connections: every answer is a 4xx with an OpenAI error body (except a request target that is
 * not a URI at all and framing Netty's decoder refuses, answered 400 with an empty body; and framing refusals that
 * are 501 or 505 by RFC 9112), none is a 500, no ERROR line or stack trace is logged, no connection hangs
 * (each answer within 30 s), none reached a lane (the routing counters did not move), and afterwards the server
 * answers a normal request.
 */
class HttpFuzzTest extends HardenedServingContext {
    static final long SEED = 20_261_129L;
    static final int CONNECTIONS = 4;
    static final int PER_CONNECTION = 2_500;

    /** What one connection saw. */
    record Seen(Map<Integer, Integer> statuses, List<String> failures) {
    }

    Seen fuzz(int connection) throws IOException {
        HostileRequests gen = new HostileRequests(SEED + connection, KEY);
        Map<Integer, Integer> statuses = new TreeMap<>();
        List<String> failures = new ArrayList<>();
        try (Http1Client http = new Http1Client("localhost", port, 30_000)) {
            for (int i = 0; i < PER_CONNECTION; i++) {
                HostileRequests.Request r = gen.next();
                Http1Client.Response resp;
                try {
                    resp = http.exchange(r.bytes());
                } catch (IOException e) {
                    failures.add(r.what() + " " + r.path() + " -> " + e);
                    http.close();
                    continue;
                }
                statuses.merge(resp.status(), 1, Integer::sum);
                String body = resp.text();
                boolean openAiError = body.startsWith("{\"error\":{\"message\":\"") && body.contains("\"type\":\"")
                        && String.valueOf(resp.header("content-type")).startsWith("application/json")
                        || r.malformedUri() && resp.status() == 400 && body.isEmpty();
                boolean statusOk = r.status() == 0 ? resp.status() >= 400 && resp.status() <= 499
                        : resp.status() == r.status();
                if (!statusOk || !openAiError) {
                    if (failures.size() < 20) {
                        failures.add(r.what() + " " + r.path() + " -> " + resp.status() + " "
                                + body.substring(0, Math.min(300, body.length())));
                    }
                }
            }
        }
        return new Seen(statuses, failures);
    }

    @Test
    void tenThousandHostileRequestsGetOnly4xxOpenAiErrorsAndTheServerServesOn() throws Exception {
        double routed = routedSoFar();
        double finished = finishedSoFar();
        double serverErrors = serverErrorsSoFar();
        try (LogEvents logs = new LogEvents()) {
            Map<Integer, Integer> statuses = new TreeMap<>();
            List<String> failures = new ArrayList<>();
            try (ExecutorService pool = Executors.newFixedThreadPool(CONNECTIONS)) {
                List<Future<Seen>> runs = new ArrayList<>();
                for (int c = 0; c < CONNECTIONS; c++) {
                    int connection = c;
                    runs.add(pool.submit(() -> fuzz(connection)));
                }
                for (Future<Seen> f : runs) {
                    Seen s = f.get(5, TimeUnit.MINUTES);
                    s.statuses().forEach((k, v) -> statuses.merge(k, v, Integer::sum));
                    failures.addAll(s.failures());
                }
            }
            assertThat(failures).as("answers that were not a 4xx OpenAI error").isEmpty();
            assertThat(logs.errorsOrStacks()).as("ERROR lines or stack traces logged").isEmpty();
            assertThat(serverErrorsSoFar()).as("5xx counted").isEqualTo(serverErrors);
            assertThat(statuses.values().stream().mapToInt(Integer::intValue).sum())
                    .isEqualTo(CONNECTIONS * PER_CONNECTION);
            assertThat(statuses.keySet()).as("statuses seen: " + statuses)
                    .allMatch(s -> s >= 400 && s < 500 || s == 501 || s == 505)
                    .contains(400, 401, 404, 413, 415, 501, 505);
            assertThat(routedSoFar()).as("requests that reached a lane").isEqualTo(routed);
            assertThat(finishedSoFar()).isEqualTo(finished);
            assertThat(post("/v1/completions", "{\"prompt\":\"The ls command\",\"max_tokens\":3,\"temperature\":0}").body())
                    .contains("\"text\":\" is used to\"");
        }
    }
}
