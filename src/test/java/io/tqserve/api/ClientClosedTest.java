package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import org.junit.jupiter.api.Test;
import reactor.netty.channel.AbortedException;

/** A connection the client closed is not a server fault: the error handler recognises Reactor Netty's abort. */
class ClientClosedTest {

    @Test
    void anAbortAnywhereInTheCauseChainIsTheClientClosing() {
        assertThat(OpenAiErrorHandler.clientClosed(new AbortedException("Connection has been closed"))).isTrue();
        assertThat(OpenAiErrorHandler.clientClosed(
                new IllegalStateException(new AbortedException("Connection has been closed")))).isTrue();
        assertThat(OpenAiErrorHandler.clientClosed(new IOException("disk full"))).isFalse();
        assertThat(OpenAiErrorHandler.clientClosed(new IllegalStateException("boom", new IOException()))).isFalse();
    }
}
