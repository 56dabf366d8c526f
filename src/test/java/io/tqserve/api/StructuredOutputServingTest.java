package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import tools.jackson.databind.JsonNode;

/**
 * Constraint compiles end to end: a request refused by the max_tokens check leaves nothing in the cache, an
 * admitted one is cached and found again, a client that disconnects while its compile runs gets that compile
 * interrupted, and the cache reports its bytes within its bound.
 */
class StructuredOutputServingTest extends ServingTestContext {
    static final AtomicLong UNIQUE = new AtomicLong(System.nanoTime());

    @Autowired
    GenerationHandler handler;
    @Autowired
    ConstraintPool pool;

    /** A schema no other request used (so its first request compiles it); its shortest output is 3+ tokens. */
    static String freshSchema() {
        String name = "k" + UNIQUE.incrementAndGet();
        return "{\"type\":\"object\",\"properties\":{\"" + name + "\":{\"type\":\"string\",\"maxLength\":4}},"
                + "\"required\":[\"" + name + "\"],\"additionalProperties\":false}";
    }

    static String chat(String schema, int maxTokens) {
        return "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":" + maxTokens
                + ",\"temperature\":0,\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"t\","
                + "\"schema\":" + schema + "}}}";
    }

    double compiles(String outcome) {
        return counter("tqserve.structured.compiles", "outcome", outcome);
    }

    double lookups(String result) {
        return counter("tqserve.structured.cache.lookups", "result", result);
    }

    @Test
    void aRefusedRequestLeavesNothingCachedAndAnAdmittedOneIsFoundAgain() throws Exception {
        String schema = freshSchema();
        double compiled = compiles("compiled");
        double hits = lookups("hit");
        HttpResponse<String> refused = post("/v1/chat/completions", chat(schema, 2));
        assertThat(refused.statusCode()).isEqualTo(400);
        JsonNode error = Json.read(refused.body().getBytes(StandardCharsets.UTF_8)).get("error");
        assertThat(error.get("code").asString()).isEqualTo("max_tokens_too_small");
        assertThat(error.get("param").asString()).isEqualTo("max_completion_tokens");
        int entries = handler.constraintCache().size();
        // refused again: compiled again, because nothing was cached
        assertThat(post("/v1/chat/completions", chat(schema, 2)).statusCode()).isEqualTo(400);
        assertThat(compiles("compiled")).isEqualTo(compiled + 2);
        assertThat(lookups("hit")).isEqualTo(hits);
        assertThat(handler.constraintCache().size()).isEqualTo(entries);
        // admitted: cached, and the next request finds it
        HttpResponse<String> ok = post("/v1/chat/completions", chat(schema, 40));
        assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
        assertThat(handler.constraintCache().size()).isEqualTo(entries + 1);
        assertThat(post("/v1/chat/completions", chat(schema, 40)).statusCode()).isEqualTo(200);
        assertThat(compiles("compiled")).isEqualTo(compiled + 3);
        assertThat(lookups("hit")).isEqualTo(hits + 1);
        ConstraintCache cache = handler.constraintCache();
        assertThat(registry.get("tqserve.structured.cache.bytes").gauge().value()).isEqualTo(cache.bytes())
                .isPositive().isLessThanOrEqualTo(pool.settings().cacheBytes());
        assertThat(registry.get("tqserve.structured.cache.entries").gauge().value()).isEqualTo(cache.size());
    }

    @Test
    void aClientDisconnectingDuringItsCompileInterruptsTheCompile() throws Exception {
        double running = registry.get("tqserve.structured.compiles.running").gauge().value();
        CompileDisconnect.assertCancelsItsCompile(pool, port, "", chat(freshSchema(), 40)
                .getBytes(StandardCharsets.UTF_8), () -> compiles("cancelled"));
        assertThat(registry.get("tqserve.structured.compiles.running").gauge().value()).isEqualTo(running);
    }
}
