package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.cli.Http1Client;
import io.tqserve.config.TqserveApplication;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;

/**
 * The read timeouts: a connection that trickles its request headers one byte at a time (which restarts Reactor
 * Netty's own idle timer with every byte) gets a 408 and is closed at the header timeout; a keep-alive connection
 * left idle after its answer is closed at the idle timeout; a body that stops half way is closed at the body
 * timeout — all while an SSE stream on another connection is held mid-generation for longer than all of them, sends
 * its keep-alive comments and then completes. Nothing is logged at ERROR and no 5xx is counted.
 */
@SpringBootTest(classes = {TqserveApplication.class, LaneProbe.class},
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "tqserve.lanes.turbo.enabled=false",
            "tqserve.api.http.header-timeout=1s",
            "tqserve.api.http.idle-timeout=2s",
            "tqserve.api.http.body-timeout=1s",
            "tqserve.api.keep-alive-interval=200ms"
        })
class HttpTimeoutTest extends ServingClient {
    static final int MAX_TOKENS = 37;

    /**
     * Reads until the server closes the connection; returns what it sent. A reset after the answer counts as the
     * close: the slow-header client may still be trickling a byte when the server closes, and the kernel answers
     * that byte with a reset, which the next read reports once the answer and the FIN have been read.
     */
    static String untilClosed(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        byte[] chunk = new byte[8192];
        try {
            for (int n; (n = in.read(chunk)) >= 0; ) {
                b.write(chunk, 0, n);
            }
        } catch (SocketException e) {
            if (!String.valueOf(e.getMessage()).contains("reset")) {
                throw e;
            }
        }
        return b.toString(StandardCharsets.ISO_8859_1);
    }

    static double secondsSince(long nanos) {
        return (System.nanoTime() - nanos) / 1e9;
    }

    @Test
    void slowHeadersIdleKeepAliveAndStalledBodiesAreClosedWhileAnSseStreamRunsOn() throws Exception {
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        batchedLane().setStepHook((request, generated) -> {
            if (request.params().maxTokens() == MAX_TOKENS && generated == 2) {
                held.countDown();
                try {
                    release.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        double serverErrors = serverErrorsSoFar();
        try (LogEvents logs = new LogEvents(); Http1Client sse = new Http1Client("localhost", port, 60_000)) {
            Http1Client.Head head = sse.send(Http1Client.postJson("/v1/completions", "{\"prompt\":\"The ls command\","
                    + "\"max_tokens\":" + MAX_TOKENS + ",\"temperature\":0,\"stream\":true}"));
            assertThat(head.status()).isEqualTo(200);
            InputStream stream = sse.body(head);
            assertThat(held.await(60, TimeUnit.SECONDS)).isTrue();
            long heldSince = System.nanoTime();

            // 1. headers trickled one byte every 200 ms: 408 and closed at the 1 s header timeout
            double slowHeaders;
            try (Socket s = new Socket("localhost", port)) {
                s.setSoTimeout(20_000);
                OutputStream out = s.getOutputStream();
                long start = System.nanoTime();
                out.write("GET /v1/models HTTP/1.1\r\nHost: localhost\r\n".getBytes(StandardCharsets.ISO_8859_1));
                AtomicBoolean closed = new AtomicBoolean();
                Thread trickle = Thread.ofVirtual().start(() -> {
                    try {
                        while (!closed.get()) {
                            out.write('a');
                            Thread.sleep(200); // the slow client's pace, not a synchronisation
                        }
                    } catch (IOException | InterruptedException e) {
                        // the server closed the connection
                    }
                });
                String answer = untilClosed(s.getInputStream());
                slowHeaders = secondsSince(start);
                closed.set(true);
                trickle.join();
                assertThat(answer).startsWith("HTTP/1.1 408 ").contains("\"code\":\"request_timeout\"");
            }
            assertThat(slowHeaders).isBetween(0.9, 4.0);

            // 2. an idle keep-alive connection: closed at the 2 s idle timeout after its answer
            double idle;
            try (Socket s = new Socket("localhost", port)) {
                s.setSoTimeout(20_000);
                s.getOutputStream().write("GET /v1/models HTTP/1.1\r\nHost: localhost\r\n\r\n"
                        .getBytes(StandardCharsets.ISO_8859_1));
                InputStream in = s.getInputStream();
                String status = Http1Client.utf8Line(in);
                long answered = System.nanoTime();
                assertThat(status).startsWith("HTTP/1.1 200");
                String rest = untilClosed(in);
                idle = secondsSince(answered);
                assertThat(rest).contains("\"object\":\"list\"");
            }
            assertThat(idle).isBetween(1.8, 6.0);

            // 3. a body that stops half way: closed at the 1 s body timeout
            double stalled;
            try (Socket s = new Socket("localhost", port)) {
                s.setSoTimeout(20_000);
                long start = System.nanoTime();
                s.getOutputStream().write(("POST /v1/completions HTTP/1.1\r\nHost: localhost\r\nContent-Type: "
                        + "application/json\r\nContent-Length: 100\r\n\r\n{\"prompt\":").getBytes(StandardCharsets.ISO_8859_1));
                String answer = untilClosed(s.getInputStream());
                stalled = secondsSince(start);
                assertThat(answer.isEmpty() || answer.startsWith("HTTP/1.1 408 ")).as(answer).isTrue();
            }
            assertThat(stalled).isBetween(0.9, 4.0);

            // 4. the stream, held longer than every timeout, is still open; it sent keep-alive comments meanwhile
            assertThat(secondsSince(heldSince)).isGreaterThan(2.0);
            release.countDown();
            int keepAlives = 0;
            boolean finished = false;
            String last = null;
            String line;
            while ((line = Http1Client.utf8Line(stream)) != null) {
                if (line.equals(": keep-alive")) {
                    keepAlives++;
                } else if (line.contains("\"finish_reason\":\"length\"")) {
                    finished = true;
                }
                if (!line.isEmpty()) {
                    last = line;
                }
                if ("data: [DONE]".equals(line)) {
                    break;
                }
            }
            assertThat(last).isEqualTo("data: [DONE]");
            assertThat(finished).as("the stream ran to max_tokens").isTrue();
            assertThat(keepAlives).as("keep-alive comments while held").isGreaterThanOrEqualTo(5);
            assertThat(logs.errorsOrStacks()).isEmpty();
        } finally {
            release.countDown();
        }
        assertThat(serverErrorsSoFar()).as("5xx counted").isEqualTo(serverErrors);
    }
}
