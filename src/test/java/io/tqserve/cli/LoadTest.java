package io.tqserve.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.MeterRegistry;
import io.tqserve.engine.Lane;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * The short version of {@code ./tqserve bench load}, on a server of its own bound to 127.0.0.1 (both lanes, the
 * turbo lane on bf16): 16 streaming clients over both lanes for 10 s, then a storm of 100 clients that disconnect
 * at random points. Bounded in time (the clients stop sending after 10 s) and count; loopback only.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class LoadTest {
    static ConfigurableApplicationContext ctx;
    static int port;

    @BeforeAll
    static void start() throws Exception {
        ctx = LoadBenchmark.startServer(List.of("--tqserve.kv.scheme=bf16", "--tqserve.api.keep-alive-interval=1h"));
        port = LoadBenchmark.port(ctx);
    }

    @AfterAll
    static void stop() {
        ctx.close();
    }

    double cancelledSoFar() {
        MeterRegistry registry = ctx.getBean(MeterRegistry.class);
        return registry.find("tqserve.requests.finished").tag("finish_reason", "cancelled").counters().stream()
                .mapToDouble(c -> c.count()).sum();
    }

    /**
     * No 5xx, every stream ends with [DONE] (after its finish or an error event), both lanes served, the KV bytes
     * gauge of both lanes back at 0, and the heap after a full GC within 10% of where it was after the warm-up.
     */
    @Test
    @Order(1)
    void sixteenStreamingClientsForTenSecondsLeaveNoKvAndNoHeapBehind() throws Exception {
        LoadClients.run("127.0.0.1", port, new LoadClients.Options(16, Duration.ofSeconds(2), 32, 7, null));
        assertThat(LoadBenchmark.settle(ctx, Duration.ofSeconds(60)).idle()).isTrue();
        long heapStart = LoadBenchmark.heapAfterGc();

        LoadClients.Tally t = LoadClients.run("127.0.0.1", port,
                new LoadClients.Options(16, Duration.ofSeconds(10), 32, 1, null));
        LoadBenchmark.Settled settled = LoadBenchmark.settle(ctx, Duration.ofSeconds(60));
        long heapEnd = LoadBenchmark.heapAfterGc();

        System.out.printf("load test: %d requests, %d streams done, %d with an error event, %d broken, %d 4xx, "
                + "%d 5xx, %.1f tok/s, TTFT p50 %.0f ms p99 %.0f ms, heap %d -> %d bytes%n", t.requests.get(),
                t.streamsDone.get(), t.streamsFailed.get(), t.streamsBroken.get(), t.status4xx.get(),
                t.status5xx.get(), t.tokens.get() / t.seconds, LoadClients.quantileMillis(t.ttfts(), 0.5),
                LoadClients.quantileMillis(t.ttfts(), 0.99), heapStart, heapEnd);
        assertThat(t.problems).isEmpty();
        assertThat(t.status5xx.get()).isZero();
        assertThat(t.streamsBroken.get()).as("streams without [DONE]").isZero();
        assertThat(t.ioErrors.get()).isZero();
        assertThat(t.streamsDone.get() + t.streamsFailed.get()).isEqualTo(t.requests.get() - t.status4xx.get());
        assertThat(t.ttfts(true)).as("streams on the turbo lane").isNotEmpty();
        assertThat(t.ttfts(false)).as("streams on the batched lane").isNotEmpty();
        assertThat(t.tokens.get()).isPositive();
        assertThat(settled.idle()).isTrue();
        assertThat(settled.kvBytesUsed()).containsEntry(Lane.Kind.TURBO, 0L).containsEntry(Lane.Kind.BATCHED, 0L);
        assertThat(LoadBenchmark.heapWithinTolerance(heapStart, heapEnd))
                .as("heap after GC %d bytes, at the start %d", heapEnd, heapStart).isTrue();
    }

    /**
     * 100 clients each send a streamed request and go away at a random point: while sending the headers or the
     * body, right after the request, after the status line, after some events, or in the middle of one; by a
     * normal close or a reset. Afterwards both lanes hold no KV bytes and run nothing, and the server answers.
     */
    @Test
    @Order(2)
    void aStormOfHundredDisconnectingClientsLeavesNoKvBytesInUse() throws Exception {
        double cancelledBefore = cancelledSoFar();
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> all = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                int client = i;
                all.add(pool.submit(() -> {
                    disconnectingClient(client);
                    return null;
                }));
            }
            for (Future<?> f : all) {
                f.get(2, TimeUnit.MINUTES);
            }
        }
        LoadBenchmark.Settled settled = LoadBenchmark.settle(ctx, Duration.ofSeconds(60));
        assertThat(settled.idle()).as("lanes idle with no KV bytes in use: " + settled.kvBytesUsed()).isTrue();
        assertThat(settled.kvBytesUsed()).containsEntry(Lane.Kind.TURBO, 0L).containsEntry(Lane.Kind.BATCHED, 0L);
        assertThat(cancelledSoFar() - cancelledBefore).as("sequences cancelled by the storm").isPositive();
        try (Http1Client http = new Http1Client("127.0.0.1", port, 60_000)) {
            Http1Client.Response r = http.exchange(Http1Client.postJson("/v1/completions",
                    "{\"prompt\":\"The ls command\",\"max_tokens\":3,\"temperature\":0}"));
            assertThat(r.status()).isEqualTo(200);
            assertThat(r.text()).contains("\"text\":\" is used to\"");
        }
    }

    static void disconnectingClient(int client) throws Exception {
        SplittableRandom rnd = new SplittableRandom(4242L + client);
        boolean turbo = client % 4 == 0;
        String json = "{\"prompt\":\"" + LoadClients.PROMPTS[client % LoadClients.PROMPTS.length].replace("\n", "\\n")
                + "\",\"max_tokens\":200,\"ignore_eos\":true,\"temperature\":0.7,\"seed\":" + client
                + ",\"stream\":" + (client % 10 != 9) + ",\"tqserve_lane\":\"" + (turbo ? "turbo" : "batched") + "\"}";
        byte[] request = Http1Client.postJson("/v1/completions", json);
        int headEnd = new String(request, StandardCharsets.ISO_8859_1).indexOf("\r\n\r\n") + 4;
        boolean streamed = client % 10 != 9;
        int point = streamed ? rnd.nextInt(7) : new int[] {0, 1, 2, 6}[rnd.nextInt(4)]; // a whole body comes at the end
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(60_000);
            if (rnd.nextBoolean()) {
                socket.setSoLinger(true, 0); // close with a reset instead of a FIN
            }
            OutputStream out = socket.getOutputStream();
            InputStream in = socket.getInputStream();
            switch (point) {
                case 0 -> out.write(request, 0, 1 + rnd.nextInt(headEnd - 1)); // inside the headers
                case 1 -> out.write(request, 0, headEnd + rnd.nextInt(request.length - headEnd)); // inside the body
                case 2 -> out.write(request); // the whole request, then gone
                case 3 -> { // after the status line
                    out.write(request);
                    Http1Client.line(in);
                }
                case 4 -> { // after some events
                    out.write(request);
                    int events = 1 + rnd.nextInt(12);
                    String line;
                    while (events > 0 && (line = Http1Client.line(in)) != null) {
                        if (line.startsWith("data: ")) {
                            events--;
                        }
                    }
                }
                case 5 -> { // in the middle of an event
                    out.write(request);
                    int bytes = 1 + rnd.nextInt(2500);
                    for (int i = 0; i < bytes && in.read() >= 0; i++) {
                        // read and drop
                    }
                }
                default -> { // after a random short while
                    out.write(request);
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(rnd.nextInt(300)));
                }
            }
            out.flush();
        } catch (java.io.IOException e) {
            // the server may answer 429 and close, or the reset may race our last write: the point is going away
        }
    }
}
