package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A stream's pipeline runs on its connection's event loop ({@link ResponseLoop}): every token of a stream is
 * handled (timed, encoded, written) on a Reactor Netty event loop thread ({@code webflux-http-epoll-N} here),
 * never on the lane thread that emitted it.
 * With the lane thread pushing tokens down the pipeline while the event loop sent write demand up it, a stream
 * could stall for good (a request racing a concat's switch to its next source was lost).
 */
class StreamThreadTest extends ServingTestContext {

    @ParameterizedTest
    @ValueSource(strings = {"batched", "turbo"})
    void everyStreamedTokenIsHandledOnTheConnectionsEventLoop(String lane) throws Exception {
        probe.clearTokenThreads();
        HttpResponse<String> r = post("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":"
                + "\"What is ls?\"}],\"max_tokens\":12,\"ignore_eos\":true,\"temperature\":0,\"stream\":true,"
                + "\"tqserve_lane\":\"" + lane + "\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(r.headers().firstValue("X-Tqserve-Lane")).hasValue(lane);
        assertThat(r.body()).endsWith("data: [DONE]\n\n");
        assertThat(probe.tokenThreads()).as("threads that handled the stream's tokens").isNotEmpty()
                .allMatch(name -> name.matches(".+-http-(epoll|nio|kqueue|io_uring)-\\d+"), "a Netty event loop");
    }
}
