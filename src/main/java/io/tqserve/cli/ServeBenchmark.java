package io.tqserve.cli;

import io.tqserve.backend.ComputeBackend;
import io.tqserve.backend.DeviceStats;
import io.tqserve.engine.BatchedBf16Lane;
import io.tqserve.engine.GenerationEvent;
import io.tqserve.engine.GenerationRequest;
import io.tqserve.engine.Lane;
import io.tqserve.engine.SamplingParams;
import io.tqserve.model.Model;
import io.tqserve.routing.ServingRuntime;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import reactor.core.publisher.Flux;

/**
 * {@code ./tqserve bench serve [--model DIR | --synthetic] [--tokens N] [--rounds R] [--threads N]
 * [--backend auto|cpu|mlx] [--mlx-library FILE] [--mlx-dtype native|float32]}: starts the server in this JVM on a
 * free loopback port ({@code --synthetic}: on a ~0.5B random bf16 Llama written to a temp folder, as bench decode
 * does), then measures in one run
 * <ol>
 *   <li>the batched lane's aggregate decode tok/s with 1, 2, 4 and 8 concurrent greedy streams (submitted to the
 *       lane directly), as a ratio to one stream, with the device evaluations and the bytes copied from the device
 *       to Java per lane step (zero on the CPU backend);</li>
 *   <li>one stream's decode tok/s read over HTTP (SSE, loopback) against the same lane driven directly, as a
 *       loss percentage. Both ask for the sampled token's logprob, so that every token has its SSE frame: a
 *       token whose text is empty or held back (a special token, part of a UTF-8 character, a possible stop
 *       string) sends no frame otherwise, and a stream of them (the random synthetic model's greedy output is
 *       mostly tokens with empty text) would leave nothing to time.</li>
 * </ol>
 * Decode rates count only the window in which every stream of a run is decoding (after the last first token,
 * before the first last token), so prefill and the ramp are left out. Streams use {@code ignore_eos} so every run
 * generates exactly N tokens. Because wall-clock rates on a shared machine depend on what else runs, the CPU time
 * of the engine's threads (lane + kernel pool) and of the HTTP path's threads is reported too: tokens per engine
 * CPU-second show what batching saves independent of contention, and the HTTP path's CPU per token is what a
 * stream costs on top of the engine. On a device backend the step runs on native threads (MLX's, BLAS's) that
 * the JVM's thread accounting does not see, so tokens per CPU-second of the whole process are reported as well.
 */
final class ServeBenchmark {
    static final String[] PROMPTS = {
        "The ls command", "NAME\n       grep - print lines that match patterns", "SYNOPSIS\n       tar",
        "The following options are", "DESCRIPTION\n       The", "Exit status is 0 if",
        "See also the manual page of", "ENVIRONMENT\n       HOME"};

    private ServeBenchmark() {
    }

    static int run(String[] args) throws Exception {
        CliArgs a = new CliArgs(args, 2, Set.of("--model", "--tokens", "--rounds", "--threads", "--backend",
                "--mlx-library", "--mlx-dtype"), Set.of("--synthetic"));
        if (a.has("--synthetic")) {
            Path dir = SyntheticModel.writeTemp();
            try {
                return run(a, dir.toString());
            } finally {
                SyntheticModel.deleteTree(dir);
            }
        }
        return run(a, a.get("--model", TqserveMain.DEFAULT_MODEL));
    }

    private static int run(CliArgs a, String modelPath) throws Exception {
        int tokens = a.getInt("--tokens", 128);
        int rounds = a.getInt("--rounds", 3);
        SpringApplication app = ServeCommand.benchApplication();
        try (ConfigurableApplicationContext ctx = app.run("--server.port=0", "--server.address=127.0.0.1",
                "--tqserve.model.path=" + modelPath, "--tqserve.backend.type=" + a.get("--backend", "auto"),
                "--tqserve.backend.mlx.library=" + a.get("--mlx-library", ""),
                "--tqserve.backend.mlx.dtype=" + a.get("--mlx-dtype", "native"),
                "--tqserve.backend.threads=" + a.getInt("--threads", 0), "--tqserve.lanes.batched.max-batch=8")) {
            ServingRuntime runtime = ctx.getBean(ServingRuntime.class);
            ServingRuntime.Loaded loaded = runtime.whenLoaded().get(10, TimeUnit.MINUTES);
            Lane lane = loaded.routing().lane(Lane.Kind.BATCHED).orElseThrow(
                    () -> new IllegalArgumentException("the batched lane is disabled"));
            int port = ((WebServerApplicationContext) ctx).getWebServer().getPort();
            Model model = loaded.model();
            System.out.println("tqserve bench serve: model " + runtime.modelId() + ", "
                    + model.transformer().backend().describe() + ", " + tokens + " tokens per stream, best of "
                    + rounds + " rounds");
            // Warm-up: JIT-compile the step loop, the kernels at every batch size, and the HTTP path.
            double rate8 = 0;
            for (int c : new int[] {8, 4, 2, 1}) {
                double r = streams(lane, model, c, Math.min(48, tokens), NO_LOGPROBS);
                rate8 = c == 8 ? r : rate8;
            }
            // The HTTP path runs once per token: give the JIT ~8000 of them (8 concurrent streams, twice), or what
            // the engine makes in ~20 s when it is slow (then a step costs far more than the HTTP path's work).
            int warmTokens = (int) Math.min(Math.min(512, 4 * tokens), Math.max(tokens, rate8 * 20 / 8));
            for (int i = 0; i < 2; i++) {
                List<Thread> warm = new ArrayList<>();
                for (int c = 0; c < 8; c++) {
                    warm.add(Thread.ofPlatform().start(() -> {
                        try {
                            overHttp(port, warmTokens);
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    }));
                }
                for (Thread t : warm) {
                    t.join();
                }
            }

            System.out.println();
            System.out.println("batched lane, aggregate decode tok/s (lane driven directly):");
            System.out.println("streams  tok/s    vs 1 stream   tok per engine CPU-s   vs 1 stream   tok per process "
                    + "CPU-s   vs 1 stream   device evals/step   bytes device->Java/step");
            double one = 0;
            double oneCpu = 0;
            double oneProcess = 0;
            ComputeBackend backend = model.transformer().backend();
            for (int c : new int[] {1, 2, 4, 8}) {
                double best = 0;
                long cpuNanos = 0;
                long processNanos = 0;
                DeviceStats before = backend.deviceStats();
                long stepsBefore = lane instanceof BatchedBf16Lane b ? b.steps() : 0;
                for (int r = 0; r < rounds; r++) {
                    long cpuBefore = cpuByRole()[0];
                    long processBefore = BatchedDecode.processCpuNanos();
                    best = Math.max(best, streams(lane, model, c, tokens, NO_LOGPROBS));
                    processNanos += BatchedDecode.processCpuNanos() - processBefore;
                    cpuNanos += cpuByRole()[0] - cpuBefore;
                }
                DeviceStats d = backend.deviceStats().since(before);
                long steps = Math.max(1, (lane instanceof BatchedBf16Lane b ? b.steps() : 0) - stepsBefore);
                double perCpu = (double) rounds * c * tokens / (cpuNanos / 1e9);
                double perProcess = (double) rounds * c * tokens / (processNanos / 1e9);
                if (c == 1) {
                    one = best;
                    oneCpu = perCpu;
                    oneProcess = perProcess;
                }
                System.out.printf("%7d  %7.1f  %6.2fx        %10.1f           %6.2fx        %10.1f            %6.2fx"
                        + "        %8.2f            %8.1f%n", c, best, best / one, perCpu, perCpu / oneCpu,
                        perProcess, perProcess / oneProcess, (double) d.evaluations() / steps,
                        (double) d.bytesToJava() / steps);
            }

            System.out.println();
            System.out.println("one stream, decode tok/s: HTTP (SSE over loopback) vs the lane alone (both with the "
                    + "token's logprob, so every token has a frame):");
            double engine = 0;
            double http = 0;
            long[] cpu = new long[3];
            for (int r = 0; r < rounds; r++) {
                engine = Math.max(engine, streams(lane, model, 1, tokens, 0));
                long[] before = cpuByRole();
                http = Math.max(http, overHttp(port, tokens));
                long[] after = cpuByRole();
                for (int i = 0; i < 3; i++) {
                    cpu[i] += after[i] - before[i];
                }
            }
            System.out.printf("lane alone  %7.1f tok/s%nover HTTP   %7.1f tok/s%nloss        %6.1f %%%n", engine, http,
                    100 * (1 - http / engine));
            long n = (long) rounds * tokens;
            System.out.printf("HTTP path CPU / engine CPU per token: %.1f %%%n", 100.0 * (cpu[1] + cpu[2]) / cpu[0]);
            System.out.printf("CPU per streamed token: engine (lane + kernel threads) %.0f us, server HTTP path "
                    + "(API scheduler, Netty, timers) %.0f us, client reader %.0f us; %d cores%n", cpu[0] / 1e3 / n,
                    cpu[1] / 1e3 / n, cpu[2] / 1e3 / n, Runtime.getRuntime().availableProcessors());
        }
        return 0;
    }

    /** CPU nanoseconds so far of the engine's threads, the server's other threads, and this (client) thread. */
    static long[] cpuByRole() {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long[] out = new long[3];
        long self = Thread.currentThread().threadId();
        for (ThreadInfo ti : mx.getThreadInfo(mx.getAllThreadIds())) {
            if (ti == null) {
                continue;
            }
            long t = mx.getThreadCpuTime(ti.getThreadId());
            if (t < 0) {
                continue;
            }
            String name = ti.getThreadName();
            int role = ti.getThreadId() == self ? 2
                    : name.startsWith("tqserve-batched-lane") || name.startsWith("tqserve-turbo-lane")
                            || name.startsWith("tqserve-kernel") ? 0 : 1;
            out[role] += t;
            if (role == 1 && System.getProperty("tqserve.bench.debug") != null) {
                System.out.println("  cpu " + name + " " + t / 1000000 + " ms");
            }
        }
        return out;
    }

    private static final int NO_LOGPROBS = -1;

    /**
     * Runs {@code c} greedy streams at once ({@code topLogprobs}: -1 none, 0 the sampled token's); returns the
     * aggregate tok/s while all of them decode.
     */
    static double streams(Lane lane, Model model, int c, int tokens, int topLogprobs) {
        SamplingParams p = new SamplingParams(0f, 0, 1f, 0f, null, 1f, 0f, 0f, Map.of(), tokens, List.of(), true,
                topLogprobs);
        List<Flux<long[]>> runs = new ArrayList<>();
        for (int i = 0; i < c; i++) {
            GenerationRequest req = new GenerationRequest(model.tokenizer().encode(PROMPTS[i % PROMPTS.length]), p);
            runs.add(lane.submit(req).filter(e -> e instanceof GenerationEvent.Token)
                    .map(e -> new long[] {System.nanoTime()}).cache());
        }
        List<long[]> times = new ArrayList<>();
        for (Flux<long[]> f : runs) {
            f.subscribe();
        }
        for (Flux<long[]> f : runs) {
            times.add(f.map(t -> t[0]).collectList().block().stream().mapToLong(Long::longValue).toArray());
        }
        return windowRate(times);
    }

    /** Tokens per second inside [last first token, first last token] over all streams. */
    static double windowRate(List<long[]> times) {
        for (long[] t : times) {
            if (t.length < 2) {
                throw new IllegalStateException("a stream produced " + t.length + " timed tokens: nothing to time");
            }
        }
        long from = times.stream().mapToLong(t -> t[0]).max().orElseThrow();
        long to = times.stream().mapToLong(t -> t[t.length - 1]).min().orElseThrow();
        long count = 0;
        for (long[] t : times) {
            count += Arrays.stream(t).filter(x -> x > from && x <= to).count();
        }
        return count / ((to - from) / 1e9);
    }

    /**
     * One streamed completion over HTTP/1.1 on a plain socket (the JDK HttpClient hands a streamed body over in
     * bursts, which would distort the timing); tok/s between the first and the last content frame as they arrive.
     * The request asks for the sampled token's logprob, which gives every token a frame of its own.
     */
    static double overHttp(int port, int tokens) throws Exception {
        String body = "{\"prompt\":\"" + PROMPTS[0] + "\",\"max_tokens\":" + tokens
                + ",\"temperature\":0,\"ignore_eos\":true,\"logprobs\":0,\"stream\":true,\"tqserve_lane\":\"batched\"}";
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        List<Long> times = new ArrayList<>();
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setTcpNoDelay(true);
            OutputStream out = socket.getOutputStream();
            out.write(("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    + "Connection: close\r\nContent-Length: " + bytes.length + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.write(bytes);
            out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(),
                    StandardCharsets.UTF_8));
            String status = in.readLine();
            if (status == null || !status.startsWith("HTTP/1.1 200")) {
                throw new IllegalStateException("server answered " + status);
            }
            String line;
            while ((line = in.readLine()) != null && !line.equals("data: [DONE]")) {
                if (line.startsWith("data: {") && line.contains("\"finish_reason\":null")) {
                    times.add(System.nanoTime()); // chunk-size lines of the chunked encoding are skipped
                }
            }
        }
        return windowRate(List.of(times.stream().mapToLong(Long::longValue).toArray()));
    }
}
