package io.tqserve.deploy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Iterator;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A streaming chat request read event by event on its own thread: when its first content chunk arrives, how many
 * have arrived so far, and how it ended ([DONE], or cut off by a replica that died). A wait that times out fails
 * with what the stream had received by then and the fleet's state ({@link Fleet#diagnose}: thread dumps of the
 * replicas and of this JVM, HAProxy's statistics, the replicas' metrics), so that a stall can be explained.
 */
final class SseStream {
    /** completionTokens: from the usage chunk (-1 without one). */
    record Result(int status, String replica, int contentChunks, int completionTokens, boolean completed,
            String error) {
    }

    static final Duration WAIT = Duration.ofMinutes(5);
    private static final Pattern COMPLETION_TOKENS = Pattern.compile("\"completion_tokens\":(\\d+)");
    private static final int LAST_LINES = 4;

    private final Fleet fleet;
    private final String name;
    private final long opened = System.nanoTime();
    private final CountDownLatch started = new CountDownLatch(1);
    private final AtomicInteger chunks = new AtomicInteger();
    private final AtomicInteger lines = new AtomicInteger();
    private final Deque<String> lastLines = new ArrayDeque<>(); // guarded by itself
    private volatile long lastLineAt;
    private volatile String state = "sending the request";
    private Future<Result> result;

    private SseStream(Fleet fleet, String name) {
        this.fleet = fleet;
        this.name = name;
    }

    /** Sends the request through {@code fleet}'s client and reads its events on a thread of the pool. */
    static SseStream open(Fleet fleet, String name, HttpRequest request, ExecutorService pool) {
        SseStream s = new SseStream(fleet, name);
        s.result = pool.submit(() -> s.read(request));
        return s;
    }

    private Result read(HttpRequest request) throws IOException, InterruptedException {
        try {
            return readEvents(fleet.http.send(request, HttpResponse.BodyHandlers.ofLines()));
        } catch (IOException | RuntimeException | Error e) {
            state = "failed: " + e;
            throw e;
        } finally {
            started.countDown();
        }
    }

    private Result readEvents(HttpResponse<Stream<String>> r) {
        String replica = r.headers().firstValue("X-Tqserve-Replica").orElse("?");
        state = "reading the body (status " + r.statusCode() + " from " + replica + ", lane "
                + r.headers().firstValue("X-Tqserve-Lane").orElse("?") + ")";
        boolean done = false;
        String error = null;
        int completionTokens = -1;
        try (Stream<String> body = r.body()) {
            Iterator<String> it = body.iterator();
            while (it.hasNext()) {
                String line = it.next();
                received(line);
                if (line.equals("data: [DONE]")) {
                    done = true;
                } else if (line.startsWith("data: {\"error\"")) {
                    error = line;
                } else if (line.startsWith("data: {") && line.contains("\"delta\":{\"content\":")) {
                    chunks.incrementAndGet();
                    started.countDown();
                } else if (line.startsWith("data: {") && line.contains("\"usage\":{")) {
                    Matcher m = COMPLETION_TOKENS.matcher(line);
                    completionTokens = m.find() ? Integer.parseInt(m.group(1)) : -1;
                }
            }
        } catch (UncheckedIOException e) { // the connection was cut
            error = e.getCause().toString();
        }
        state = "ended (" + (done ? "[DONE]" : "no [DONE]") + (error == null ? "" : ", " + error) + ")";
        return new Result(r.statusCode(), replica, chunks.get(), completionTokens, done && error == null, error);
    }

    private void received(String line) {
        if (line.isEmpty()) {
            return;
        }
        lines.incrementAndGet();
        lastLineAt = System.nanoTime();
        synchronized (lastLines) {
            if (lastLines.size() == LAST_LINES) {
                lastLines.removeFirst();
            }
            lastLines.addLast(line.length() > 300 ? line.substring(0, 300) + "..." : line);
        }
    }

    /** What the stream received so far: its state, its counts, how long ago its last line came, its last lines. */
    String describe() {
        long now = System.nanoTime();
        long last = lastLineAt;
        StringBuilder sb = new StringBuilder("stream " + name + ": " + state + "; opened "
                + TimeUnit.NANOSECONDS.toMillis(now - opened) + " ms ago, " + lines.get() + " lines, "
                + chunks.get() + " content chunks, last line "
                + (last == 0 ? "never" : TimeUnit.NANOSECONDS.toMillis(now - last) + " ms ago"));
        synchronized (lastLines) {
            for (String l : lastLines) {
                sb.append("\n    ").append(l);
            }
        }
        return sb.toString();
    }

    /** Waits for the first content chunk (or the end of the response). */
    void awaitStarted() throws InterruptedException {
        if (!started.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("the stream did not start within " + WAIT + "\n"
                    + fleet.diagnose("stream-" + name + "-not-started", describe()));
        }
        if (chunks.get() == 0) {
            throw new IllegalStateException("the stream ended before its first token: " + describe());
        }
    }

    int contentChunks() {
        return chunks.get();
    }

    Result result() throws Exception {
        return result(WAIT);
    }

    /** The stream's end, waited for at most {@code wait}; a timeout fails with the diagnostics. */
    Result result(Duration wait) throws Exception {
        try {
            return result.get(wait.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new IllegalStateException("the stream did not end within " + wait + "\n"
                    + fleet.diagnose("stream-" + name + "-not-ended", describe()), e);
        }
    }
}
