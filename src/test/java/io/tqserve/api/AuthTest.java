package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * With {@code tqserve.api.keys} set: every protected path answers 401 with an OpenAI error body without the key
 * or with a wrong one, and answers normally with either key; health stays open; the other exposed actuator
 * endpoints need the key; the unexposed ones are 404 even with it.
 */
class AuthTest extends HardenedServingContext {
    static final String MISSING = "{\"error\":{\"message\":\"missing API key: send Authorization: Bearer <key>\","
            + "\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"invalid_api_key\"}}";
    static final String WRONG = "{\"error\":{\"message\":\"invalid API key\",\"type\":\"invalid_request_error\","
            + "\"param\":null,\"code\":\"invalid_api_key\"}}";

    /** A request and the status it gets with a valid key. */
    record Call(String method, String path, String body, int okStatus) {
    }

    static final List<Call> PROTECTED = List.of(
            new Call("POST", "/v1/completions", "{\"prompt\":\"The ls command\",\"max_tokens\":2}", 200),
            new Call("POST", "/v1/chat/completions",
                    "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2}", 200),
            new Call("GET", "/v1/models", null, 200),
            new Call("GET", "/v1/models/tiny-llama-h128", null, 200),
            new Call("POST", "/tokenize", "{\"prompt\":\"The ls command\"}", 200),
            new Call("POST", "/detokenize", "{\"tokens\":[5,6]}", 200),
            new Call("GET", "/actuator/prometheus", null, 200),
            new Call("GET", "/actuator/metrics", null, 200),
            new Call("GET", "/actuator/info", null, 200),
            new Call("GET", "/actuator", null, 200),
            new Call("GET", "/v1/nope", null, 404),
            new Call("GET", "/", null, 404));

    /** The snapshot API (another branch adds it): protected like all of /v1/**, whatever it answers with a key. */
    static final List<Call> SNAPSHOTS = List.of(
            new Call("GET", "/v1/kv/snapshots", null, -1),
            new Call("POST", "/v1/kv/snapshots", "{}", -1),
            new Call("GET", "/v1/kv/snapshots/abc", null, -1),
            new Call("DELETE", "/v1/kv/snapshots/abc", null, -1));

    HttpResponse<String> call(Call c, String... headers) throws Exception {
        return send(c.method(), c.path(), c.body() == null ? null : c.body().getBytes(StandardCharsets.UTF_8), headers);
    }

    @Test
    void everyProtectedPathIs401WithoutTheKeyAndAnswersWithIt() throws Exception {
        for (Call c : concat(PROTECTED, SNAPSHOTS)) {
            HttpResponse<String> none = call(c);
            assertThat(none.statusCode()).as(c.path()).isEqualTo(401);
            assertThat(none.body()).as(c.path()).isEqualTo(MISSING);
            assertThat(none.headers().firstValue("Content-Type")).hasValue("application/json");
            for (String[] bad : new String[][] {{"Authorization", "Bearer wrong"}, {"Authorization", "Bearer " + KEY
                    + "x"}, {"Authorization", "Bearer " + KEY.substring(0, KEY.length() - 1)}, {"Authorization",
                    "Basic " + KEY}, {"X-Api-Key", KEY + "x"}}) {
                HttpResponse<String> r = call(c, bad);
                assertThat(r.statusCode()).as(c.path() + " " + bad[1]).isEqualTo(401);
                assertThat(r.body()).isIn(MISSING, WRONG);
            }
        }
        for (Call c : PROTECTED) {
            for (String key : new String[] {KEY, OTHER_KEY}) {
                HttpResponse<String> r = call(c, "Authorization", "Bearer " + key);
                assertThat(r.statusCode()).as(c.method() + " " + c.path()).isEqualTo(c.okStatus());
                // Anthropic's clients send the key in x-api-key
                assertThat(call(c, "x-api-key", key).statusCode()).as(c.path()).isEqualTo(c.okStatus());
            }
        }
        for (Call c : SNAPSHOTS) {
            assertThat(call(c, "Authorization", "Bearer " + KEY).statusCode()).as(c.path()).isNotEqualTo(401);
        }
    }

    @Test
    void healthAndItsProbesStayOpen() throws Exception {
        for (String path : new String[] {"/actuator/health", "/actuator/health/liveness",
                "/actuator/health/readiness"}) {
            HttpResponse<String> r = send("GET", path, null);
            assertThat(r.statusCode()).as(path).isEqualTo(200);
            assertThat(r.body()).contains("\"status\":\"UP\"");
        }
    }

    @Test
    void unexposedActuatorEndpointsAre404EvenWithTheKey() throws Exception {
        for (String path : new String[] {"/actuator/env", "/actuator/beans", "/actuator/configprops",
                "/actuator/loggers", "/actuator/threaddump", "/actuator/heapdump", "/actuator/shutdown",
                "/actuator/mappings"}) {
            HttpResponse<String> r = send("GET", path, null, "Authorization", "Bearer " + KEY);
            assertThat(r.statusCode()).as(path).isEqualTo(404);
            assertThat(r.body()).startsWith("{\"error\":");
        }
    }

    @Test
    void pathTricksDoNotReachAnOpenEndpoint() throws Exception {
        for (String path : new String[] {"/actuator/health/../prometheus", "/actuator/health%2F..%2Fprometheus",
                "//actuator/prometheus", "/actuator/prometheus/", "/ACTUATOR/prometheus", "/actuator/health;x=1/../info"}) {
            HttpResponse<String> r = send("GET", path, null);
            assertThat(r.body()).as(path).doesNotContain("tqserve_kv");
            assertThat(r.statusCode()).as(path).isBetween(400, 499);
        }
    }

    @Test
    void aKeyMatchesOnlyExactly() {
        ApiKeyFilter f = new ApiKeyFilter(new ApiSettings(List.of(KEY, OTHER_KEY), false, 512,
                java.time.Duration.ofSeconds(5), java.time.Duration.ofSeconds(1)));
        assertThat(f.matches(KEY)).isTrue();
        assertThat(f.matches(OTHER_KEY)).isTrue();
        for (String near : new String[] {"", KEY + "0", KEY.substring(1), KEY.toUpperCase(), OTHER_KEY + KEY,
                KEY.substring(0, 8), "\u0000" + KEY}) {
            assertThat(f.matches(near)).as(near).isFalse();
        }
    }

    static <T> List<T> concat(List<T> a, List<T> b) {
        return java.util.stream.Stream.concat(a.stream(), b.stream()).toList();
    }
}
