package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;

/**
 * Two API keys never share a compiled constraint: the second key's first request with a schema compiles it
 * again (counted by the compile counter, not timed), its second finds its own entry.
 */
class StructuredOutputTenancyTest extends HardenedServingContext {
    double compiled() {
        return registry.get("tqserve.structured.compiles").tag("outcome", "compiled").counter().count();
    }

    double hits() {
        return registry.get("tqserve.structured.cache.lookups").tag("result", "hit").counter().count();
    }

    HttpResponse<String> chat(String key, String schema) throws Exception {
        return send("POST", "/v1/chat/completions", StructuredOutputServingTest.chat(schema, 40).getBytes(
                java.nio.charset.StandardCharsets.UTF_8), "Authorization", "Bearer " + key);
    }

    @Test
    void theSecondKeyCompilesItsOwnConstraint() throws Exception {
        String schema = StructuredOutputServingTest.freshSchema();
        double compiled = compiled();
        double hits = hits();
        assertThat(chat(KEY, schema).statusCode()).isEqualTo(200);
        assertThat(compiled()).isEqualTo(compiled + 1);
        assertThat(chat(KEY, schema).statusCode()).isEqualTo(200);
        assertThat(hits()).as("the first key finds its entry").isEqualTo(hits + 1);
        assertThat(compiled()).isEqualTo(compiled + 1);

        assertThat(chat(OTHER_KEY, schema).statusCode()).isEqualTo(200);
        assertThat(compiled()).as("the other key compiles its own").isEqualTo(compiled + 2);
        assertThat(hits()).isEqualTo(hits + 1);
        assertThat(chat(OTHER_KEY, schema).statusCode()).isEqualTo(200);
        assertThat(hits()).isEqualTo(hits + 2);
        assertThat(compiled()).isEqualTo(compiled + 2);
    }
}
