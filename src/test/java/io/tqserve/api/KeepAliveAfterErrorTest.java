package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.cli.Http1Client;
import org.junit.jupiter.api.Test;

/**
 * A keep-alive connection keeps being answered after error answers given before the request body was read (a
 * 401 from the key filter, a 404 for an unknown path or method). Without the drain in {@link OpenAiErrorHandler},
 * Reactor Netty 1.3.6 left about one in twenty of the following requests unanswered.
 */
class KeepAliveAfterErrorTest extends HardenedServingContext {

    @Test
    void theRequestAfterA401OrA404OnTheSameConnectionIsAnswered() throws Exception {
        byte[][] errors = {
            Http1Client.request("GET", "/v1/nope", null, "Authorization", "Bearer " + KEY),
            Http1Client.request("PATCH", "/tokenize", null, "Authorization", "Bearer " + KEY),
            Http1Client.postJson("/tokenize", "{\"prompt\":\"x\"}"),
            Http1Client.postJson("/v1/nope", "{\"prompt\":\"x\"}", "Authorization", "Bearer " + KEY)};
        int[] statuses = {404, 404, 401, 404};
        byte[] tokenize = Http1Client.postJson("/tokenize", "{\"prompt\":\"The ls command\"}", "Authorization",
                "Bearer " + KEY);
        byte[] health = Http1Client.request("GET", "/actuator/health", null);
        try (Http1Client http = new Http1Client("localhost", port, 20_000)) {
            for (int i = 0; i < 200; i++) {
                int e = i % errors.length;
                assertThat(http.exchange(errors[e]).status()).isEqualTo(statuses[e]);
                assertThat(http.exchange(i % 2 == 0 ? tokenize : health).status()).as("request %d", i).isEqualTo(200);
            }
        }
    }
}
