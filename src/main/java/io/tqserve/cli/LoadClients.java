package io.tqserve.cli;

import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Streaming clients for the load test: each client (a virtual thread with its own keep-alive connection) sends
 * streamed chat and completion requests one after another until the time is up, every fourth client to the
 * turbo lane and the others to the batched lane, and reads every SSE frame as it arrives. It records each
 * response's status, whether the stream ended with {@code [DONE]} (after the finish or after an error event) or
 * broke off, the time from sending the request to the first frame with text (TTFT), and the completion tokens of
 * the usage chunk. A 429 is answered by waiting its Retry-After (at most until the end).
 */
final class LoadClients {
    static final String[] PROMPTS = ServeBenchmark.PROMPTS;
    private static final Pattern COMPLETION_TOKENS = Pattern.compile("\"completion_tokens\":(\\d+)");

    /**
     * @param clients   concurrent streaming clients
     * @param duration  how long they keep sending (a request under way at the end is finished)
     * @param maxTokens largest max_tokens of a request (each draws from [8, maxTokens])
     * @param seed      seed of every client's choices
     * @param apiKey    Bearer key to send, or null
     */
    record Options(int clients, Duration duration, int maxTokens, long seed, String apiKey) {
    }

    /** What the clients saw. */
    static final class Tally {
        final AtomicLong requests = new AtomicLong();
        final AtomicLong streamsDone = new AtomicLong();      // ended with [DONE] after the finish chunk
        final AtomicLong streamsFailed = new AtomicLong();    // an error event, then [DONE]
        final AtomicLong streamsBroken = new AtomicLong();    // ended without [DONE]
        final AtomicLong status4xx = new AtomicLong();
        final AtomicLong status429 = new AtomicLong();
        final AtomicLong status5xx = new AtomicLong();
        final AtomicLong ioErrors = new AtomicLong();
        final AtomicLong tokens = new AtomicLong();
        final List<Long> ttftTurbo = new ArrayList<>();
        final List<Long> ttftBatched = new ArrayList<>();
        final List<String> problems = new ArrayList<>();
        double seconds;

        synchronized void ttft(boolean turbo, long nanos) {
            (turbo ? ttftTurbo : ttftBatched).add(nanos);
        }

        synchronized void problem(String p) {
            if (problems.size() < 20) {
                problems.add(p);
            }
        }

        synchronized long[] ttfts() {
            long[] all = new long[ttftTurbo.size() + ttftBatched.size()];
            int i = 0;
            for (long t : ttftTurbo) {
                all[i++] = t;
            }
            for (long t : ttftBatched) {
                all[i++] = t;
            }
            Arrays.sort(all);
            return all;
        }

        synchronized long[] ttfts(boolean turbo) {
            long[] a = (turbo ? ttftTurbo : ttftBatched).stream().mapToLong(Long::longValue).toArray();
            Arrays.sort(a);
            return a;
        }

        long streams() {
            return streamsDone.get() + streamsFailed.get() + streamsBroken.get();
        }
    }

    private LoadClients() {
    }

    /** The p-quantile (0..1) of sorted values by the nearest-rank method; NaN when empty. */
    static double quantileMillis(long[] sorted, double p) {
        if (sorted.length == 0) {
            return Double.NaN;
        }
        int rank = (int) Math.ceil(p * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))] / 1e6;
    }

    /** Runs the clients against host:port until the duration is over and every client's last request ended. */
    static Tally run(String host, int port, Options o) throws InterruptedException {
        Tally tally = new Tally();
        long start = System.nanoTime();
        long end = start + o.duration().toNanos();
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> all = new ArrayList<>();
            for (int i = 0; i < o.clients(); i++) {
                int client = i;
                all.add(pool.submit(() -> client(host, port, o, client, end, tally)));
            }
            for (Future<?> f : all) {
                try {
                    f.get(o.duration().toSeconds() + 600, TimeUnit.SECONDS);
                } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                    tally.problem("client failed: " + e);
                }
            }
        }
        tally.seconds = (System.nanoTime() - start) / 1e9;
        return tally;
    }

    private static void client(String host, int port, Options o, int client, long end, Tally tally) {
        SplittableRandom rnd = new SplittableRandom(o.seed() * 1_000_003L + client);
        boolean turbo = client % 4 == 0;
        try (Http1Client http = new Http1Client(host, port, 300_000)) {
            while (System.nanoTime() < end) {
                boolean chat = rnd.nextBoolean();
                int maxTokens = 8 + rnd.nextInt(Math.max(1, o.maxTokens() - 7));
                String prompt = PROMPTS[rnd.nextInt(PROMPTS.length)];
                String json = body(chat, prompt, maxTokens, rnd.nextLong(1_000_000), turbo);
                String[] headers = o.apiKey() == null ? new String[0]
                        : new String[] {"Authorization", "Bearer " + o.apiKey()};
                byte[] request = Http1Client.postJson(chat ? "/v1/chat/completions" : "/v1/completions", json,
                        headers);
                tally.requests.incrementAndGet();
                try {
                    long t0 = System.nanoTime();
                    Http1Client.Head head = http.send(request);
                    if (head.status() != 200) {
                        http.body(head).readAllBytes();
                        countStatus(head, tally, end);
                        continue;
                    }
                    stream(http.body(head), t0, turbo, tally);
                } catch (IOException e) {
                    tally.ioErrors.incrementAndGet();
                    tally.streamsBroken.incrementAndGet();
                    tally.problem("client " + client + ": " + e);
                    http.close();
                }
            }
        }
    }

    static String body(boolean chat, String prompt, int maxTokens, long seed, boolean turbo) {
        String common = "\"max_tokens\":" + maxTokens + ",\"temperature\":0.8,\"seed\":" + seed
                + ",\"stream\":true,\"stream_options\":{\"include_usage\":true},\"tqserve_lane\":\""
                + (turbo ? "turbo" : "batched") + "\"";
        String text = prompt.replace("\n", "\\n");
        return chat ? "{\"messages\":[{\"role\":\"user\",\"content\":\"" + text + "\"}]," + common + "}"
                : "{\"prompt\":\"" + text + "\"," + common + "}";
    }

    private static void countStatus(Http1Client.Head head, Tally tally, long end) {
        int s = head.status();
        if (s >= 500) {
            tally.status5xx.incrementAndGet();
            tally.problem("status " + s);
        } else if (s >= 400) {
            tally.status4xx.incrementAndGet();
            if (s == 429) {
                tally.status429.incrementAndGet();
                String ra = head.header("retry-after");
                long waitNanos = TimeUnit.SECONDS.toNanos(ra == null ? 1 : Long.parseLong(ra.trim()));
                LockSupport.parkNanos(Math.max(0, Math.min(waitNanos, end - System.nanoTime())));
            } else {
                tally.problem("status " + s);
            }
        }
    }

    /** Reads one SSE stream to its end. */
    private static void stream(InputStream body, long t0, boolean turbo, Tally tally) throws IOException {
        boolean firstText = false;
        boolean error = false;
        String line;
        while ((line = Http1Client.utf8Line(body)) != null) {
            if (!line.startsWith("data: ")) {
                continue; // blank separators and keep-alive comments
            }
            String payload = line.substring(6);
            if (payload.equals("[DONE]")) {
                body.readAllBytes(); // the end of the chunked body, so the connection can be reused
                (error ? tally.streamsFailed : tally.streamsDone).incrementAndGet();
                return;
            }
            if (payload.startsWith("{\"error\"")) {
                error = true;
                tally.problem("error event: " + payload);
            } else if (!firstText && payload.contains("\"finish_reason\":null") && !payload.contains("\"role\":")) {
                firstText = true;
                tally.ttft(turbo, System.nanoTime() - t0);
            } else if (payload.contains("\"usage\":{")) {
                Matcher m = COMPLETION_TOKENS.matcher(payload);
                if (m.find()) {
                    tally.tokens.addAndGet(Long.parseLong(m.group(1)));
                }
            }
        }
        tally.streamsBroken.incrementAndGet();
        tally.problem("a stream ended without [DONE]");
    }
}
