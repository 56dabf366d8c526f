package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import com.networknt.schema.InputFormat;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import io.tqserve.cli.ConstraintAttackBenchmark;
import io.tqserve.config.TqserveApplication;
import io.tqserve.constraint.ConstraintBudgetException;
import io.tqserve.engine.Lane;
import io.tqserve.engine.StepHook;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import tools.jackson.databind.JsonNode;

/**
 * The attacks of issue 29 over HTTP, each harmless: {@code maxLength} 10000, {@code maxItems} 20000, a 10-level
 * {@code $ref} fan-out, 12 optional object properties and a 20000-entry {@code enum} either complete with an output
 * valid against the schema (networknt's validator) or are refused with a 400 {@code schema_too_complex}, the server
 * enforcing its one-second compile budget ({@code compile-timeout=1s}); the live heap grows by less than 64 MB
 * each; the cache stays within its byte bound; two API keys never share an entry; a disconnect cancels its compile;
 * a mask budget blown during generation ends that request with a 400 (a stream: the error event), not the lane.
 */
@SpringBootTest(classes = {TqserveApplication.class, LaneProbe.class},
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "tqserve.api.keys=" + StructuredOutputAttackTest.KEY + "," + StructuredOutputAttackTest.OTHER_KEY,
            "tqserve.api.keep-alive-interval=1h",
            "tqserve.structured-output.compile-timeout=1s",
            "tqserve.structured-output.cache-bytes=" + StructuredOutputAttackTest.CACHE_BYTES + "B"
        })
class StructuredOutputAttackTest extends ServingClient {
    static final String KEY = "attack-key-one";
    static final String OTHER_KEY = "attack-key-two";
    static final long CACHE_BYTES = 8L << 20;
    static final long HEAP_BOUND = 64L << 20;
    static final AtomicLong UNIQUE = new AtomicLong(System.nanoTime());

    @Autowired
    ConstraintPool pool;
    @Autowired
    GenerationHandler handler;

    /** The five attack schemas (the same the benchmark sends); {@link #fresh} keeps each run's cache key fresh. */
    static List<String> attacks() {
        return ConstraintAttackBenchmark.attacks();
    }

    static String fresh(String schema) {
        return "{\"title\": \"t" + UNIQUE.incrementAndGet() + "\", " + schema.substring(1);
    }

    static String chat(String schema, int maxTokens, boolean stream) {
        return "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":" + maxTokens
                + ",\"temperature\":1,\"seed\":7,\"stream\":" + stream + ",\"response_format\":{\"type\":"
                + "\"json_schema\",\"json_schema\":{\"name\":\"t\",\"schema\":" + schema + "}}}";
    }

    HttpResponse<String> post(String json, String key) throws Exception {
        return client.send(HttpRequest.newBuilder(URI.create(baseUrl() + "/v1/chat/completions"))
                .header("Content-Type", "application/json").header("Authorization", "Bearer " + key)
                .timeout(Duration.ofSeconds(120)).POST(HttpRequest.BodyPublishers.ofString(json)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    static long liveHeap() {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    double compiles(String outcome) {
        var c = registry.find("tqserve.structured.compiles").tag("outcome", outcome).counter();
        return c == null ? 0 : c.count();
    }

    @Test
    void eachAttackCompletesValidOrIsRefusedWithA400WithinBoundedHeap() throws Exception {
        List<String> outcomes = new ArrayList<>();
        for (String attack : attacks()) {
            String schema = fresh(attack);
            long before = liveHeap();
            HttpResponse<String> r = post(chat(schema, 64, false), KEY);
            JsonNode body = Json.read(r.body().getBytes(StandardCharsets.UTF_8));
            if (r.statusCode() == 200) {
                String content = body.get("choices").get(0).get("message").get("content").asString();
                assertThat(SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12)
                        .getSchema(schema, InputFormat.JSON).validate(content, InputFormat.JSON))
                        .as("%s -> %s", attack.substring(0, Math.min(80, attack.length())), content).isEmpty();
                outcomes.add("valid");
            } else {
                assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
                JsonNode error = body.get("error");
                assertThat(error.get("type").asString()).isEqualTo("invalid_request_error");
                assertThat(error.get("code").asString()).as(r.body()).isEqualTo("schema_too_complex");
                assertThat(error.get("param").asString()).isEqualTo("response_format");
                assertThat(error.get("message").asString()).containsAnyOf("budget",
                        "tqserve.structured-output.compile-timeout");
                outcomes.add("refused");
            }
            long grown = liveHeap() - before;
            assertThat(grown).as("live heap growth of %s", attack.substring(0, Math.min(80, attack.length())))
                    .isLessThan(HEAP_BOUND);
            ConstraintCache cache = handler.constraintCache();
            assertThat(cache.bytes()).isLessThanOrEqualTo(CACHE_BYTES);
        }
        System.out.println("structured-output attacks: " + outcomes);
        assertThat(outcomes).hasSize(5);
        assertThat(registry.get("tqserve.structured.cache.bytes").gauge().value()).isLessThanOrEqualTo(CACHE_BYTES);
    }

    @Test
    void twoApiKeysNeverShareACompiledAttackSchema() throws Exception {
        String schema = fresh(attacks().get(3));
        double compiled = compiles("compiled");
        assertThat(post(chat(schema, 64, false), KEY).statusCode()).isEqualTo(200);
        assertThat(post(chat(schema, 64, false), KEY).statusCode()).isEqualTo(200);
        assertThat(compiles("compiled")).as("the first key's second request finds its entry").isEqualTo(compiled + 1);
        assertThat(post(chat(schema, 64, false), OTHER_KEY).statusCode()).isEqualTo(200);
        assertThat(compiles("compiled")).as("the other key compiles its own").isEqualTo(compiled + 2);
    }

    @Test
    void aDisconnectCancelsTheAttacksCompile() throws Exception {
        CompileDisconnect.assertCancelsItsCompile(pool, port, "Authorization: Bearer " + KEY + "\r\n",
                chat(fresh(attacks().get(1)), 64, false).getBytes(StandardCharsets.UTF_8), () -> compiles("cancelled"));
    }

    @Test
    void aMaskBudgetBlownMidGenerationEndsThatRequestWithA400() throws Exception {
        StepHook blow = (request, generated) -> {
            if (request.output().constraint() != null && generated == 3) {
                throw new ConstraintBudgetException("pattern", "a token mask needed more than 10000000 work units");
            }
        };
        String schema = fresh("{\"type\": \"string\", \"maxLength\": 10000}");
        for (Lane.Kind k : Lane.Kind.values()) {
            runtime.lane(k).ifPresent(l -> {
                if (l instanceof io.tqserve.engine.BatchedBf16Lane b) {
                    b.setStepHook(blow);
                } else {
                    ((io.tqserve.engine.SerialTurboLane) l).setStepHook(blow);
                }
            });
        }
        HttpResponse<String> r = post(chat(schema, 64, false), KEY);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
        JsonNode error = Json.read(r.body().getBytes(StandardCharsets.UTF_8)).get("error");
        assertThat(error.get("type").asString()).isEqualTo("invalid_request_error");
        assertThat(error.get("code").asString()).isEqualTo("schema_too_complex");
        assertThat(error.get("message").asString()).isEqualTo("the schema exceeds a constrained-decoding budget at "
                + "'pattern': a token mask needed more than 10000000 work units");

        HttpResponse<String> s = post(chat(schema, 64, true), KEY);
        assertThat(s.statusCode()).isEqualTo(200);
        List<String> events = s.body().lines().filter(x -> x.startsWith("data: ")).toList();
        assertThat(events.getLast()).isEqualTo("data: [DONE]");
        JsonNode last = Json.read(events.get(events.size() - 2).substring(6).getBytes(StandardCharsets.UTF_8));
        assertThat(last.get("error").get("code").asString()).isEqualTo("schema_too_complex");
        assertThat(s.body()).doesNotContain("finish_reason\":\"stop");

        // the lane goes on: a free request right after completes
        HttpResponse<String> free = client.send(HttpRequest.newBuilder(URI.create(baseUrl() + "/v1/completions"))
                .header("Content-Type", "application/json").header("Authorization", "Bearer " + KEY)
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"m\",\"prompt\":\"hi\",\"max_tokens\":4}"))
                .build(), HttpResponse.BodyHandlers.ofString());
        assertThat(free.statusCode()).as(free.body()).isEqualTo(200);
    }
}
