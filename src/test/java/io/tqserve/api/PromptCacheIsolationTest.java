package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Prompt-cache isolation between API keys and {@code cache_salt}s: {@code cached_tokens} never reflects a prompt
 * that another key (or the same key with another salt) sent, while a key's own repeat is a hit.
 */
class PromptCacheIsolationTest extends HardenedServingContext {
    /** Long enough for the prompt cache (tqserve.prompt-cache.min-tokens = 16); unique to this test. */
    static final String PROMPT = "Isolation check: the quick brown fox jumps over the lazy dog while the ls command "
            + "lists every file in the current directory";

    /** usage.prompt_tokens_details.cached_tokens of a one-token completion of PROMPT. */
    int cachedTokens(String key, String extra) throws Exception {
        HttpResponse<String> r = send("POST", "/v1/completions", ("{\"prompt\":\"" + PROMPT + "\",\"max_tokens\":1,"
                + "\"temperature\":0" + extra + "}").getBytes(java.nio.charset.StandardCharsets.UTF_8),
                "Authorization", "Bearer " + key);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode usage = JsonMapper.shared().readTree(r.body()).path("usage");
        assertThat(usage.path("prompt_tokens").asInt()).isGreaterThanOrEqualTo(16);
        return usage.path("prompt_tokens_details").path("cached_tokens").asInt();
    }

    @Test
    void aPromptCachedForOneKeyIsAMissForAnotherAndAHitForItself() throws Exception {
        assertThat(cachedTokens(KEY, "")).as("first time, key A").isZero();
        assertThat(cachedTokens(OTHER_KEY, "")).as("same prompt, key B").isZero();
        assertThat(cachedTokens(KEY, "")).as("again, key A").isGreaterThanOrEqualTo(16);
        assertThat(cachedTokens(OTHER_KEY, "")).as("again, key B (its own entry now)").isGreaterThanOrEqualTo(16);
    }

    @Test
    void cacheSaltNarrowsTheNamespaceWithinOneKey() throws Exception {
        String salted = ",\"cache_salt\":\"s3cr3t-salt\"";
        assertThat(cachedTokens(KEY, salted)).as("new salt").isZero();
        assertThat(cachedTokens(OTHER_KEY, salted)).as("same salt, other key").isZero();
        assertThat(cachedTokens(KEY, salted)).as("same salt, same key").isGreaterThanOrEqualTo(16);
        assertThat(cachedTokens(KEY, ",\"cache_salt\":\"another\"")).as("other salt").isZero();
    }

    @Test
    void anInvalidCacheSaltIsA400NamingIt() throws Exception {
        for (String salt : new String[] {"1", "\"\"", "[]", "{}", "\"" + "s".repeat(1025) + "\"", "\"\\ud800\""}) {
            HttpResponse<String> r = post("/v1/completions", "{\"prompt\":\"hi\",\"max_tokens\":1,\"cache_salt\":"
                    + salt + "}");
            assertThat(r.statusCode()).as(salt).isEqualTo(400);
            JsonNode error = JsonMapper.shared().readTree(r.body()).path("error");
            assertThat(error.path("type").asString()).isEqualTo("invalid_request_error");
            assertThat(error.path("param").asString()).isEqualTo("cache_salt");
        }
    }
}
