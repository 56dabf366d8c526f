package io.tqserve.deploy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Iterator;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A streaming chat request read event by event on its own thread: when its first content chunk arrives, how many
 * have arrived so far, and how it ended ([DONE], or cut off by a replica that died).
 */
final class SseStream {
    /** completionTokens: from the usage chunk (-1 without one). */
    record Result(int status, String replica, int contentChunks, int completionTokens, boolean completed,
            String error) {
    }

    private static final Pattern COMPLETION_TOKENS = Pattern.compile("\"completion_tokens\":(\\d+)");

    private final CountDownLatch started = new CountDownLatch(1);
    private final AtomicInteger chunks = new AtomicInteger();
    private Future<Result> result;

    static SseStream open(HttpClient http, HttpRequest request, ExecutorService pool) {
        SseStream s = new SseStream();
        s.result = pool.submit(() -> s.read(http, request));
        return s;
    }

    private Result read(HttpClient http, HttpRequest request) throws IOException, InterruptedException {
        try {
            return readEvents(http.send(request, HttpResponse.BodyHandlers.ofLines()));
        } finally {
            started.countDown();
        }
    }

    private Result readEvents(HttpResponse<Stream<String>> r) {
        String replica = r.headers().firstValue("X-Tqserve-Replica").orElse("?");
        boolean done = false;
        String error = null;
        int completionTokens = -1;
        try (Stream<String> lines = r.body()) {
            Iterator<String> it = lines.iterator();
            while (it.hasNext()) {
                String line = it.next();
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
        return new Result(r.statusCode(), replica, chunks.get(), completionTokens, done && error == null, error);
    }

    /** Waits for the first content chunk (or the end of the response). */
    void awaitStarted() throws InterruptedException {
        if (!started.await(5, TimeUnit.MINUTES)) {
            throw new IllegalStateException("the stream did not start");
        }
        if (chunks.get() == 0) {
            throw new IllegalStateException("the stream ended before its first token");
        }
    }

    int contentChunks() {
        return chunks.get();
    }

    Result result() throws Exception {
        return result.get(5, TimeUnit.MINUTES);
    }
}
