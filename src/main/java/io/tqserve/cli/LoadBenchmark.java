package io.tqserve.cli;

import io.micrometer.core.instrument.MeterRegistry;
import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.engine.Lane;
import io.tqserve.kv.AttentionShape;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import io.tqserve.routing.ServingRuntime;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.management.JMException;
import javax.management.ObjectName;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * {@code ./tqserve bench load [--clients 64] [--duration 60] [--max-tokens 64] [--seed 1] [--model DIR]
 * [--threads N] [--kv-scheme S]}: starts the server in this JVM on a free port of 127.0.0.1 (loopback only) with
 * both lanes, warms it up, then runs {@link LoadClients} — concurrent streaming clients over both lanes — for the
 * duration, and checks what an operator needs to hold under load:
 * <ul>
 *   <li>no 5xx answer;</li>
 *   <li>every stream ends with {@code [DONE]} (after its finish chunk or after an error event);</li>
 *   <li>afterwards {@code tqserve.kv.bytes.used} is 0 on both lanes (waited for with a deadline);</li>
 *   <li>the heap after a full GC is within 10% of where it was after warm-up.</li>
 * </ul>
 * It prints throughput (generated tokens and requests per second) and TTFT percentiles, and exits 1 when a check
 * fails. Bounded: the clients stop sending at the end of the duration and the request under way is finished.
 */
final class LoadBenchmark {
    static final double HEAP_TOLERANCE = 0.10;

    private LoadBenchmark() {
    }

    /** What the server looked like after a run. */
    record Settled(Map<Lane.Kind, Long> kvBytesUsed, boolean idle) {
    }

    static int run(String[] args) throws Exception {
        CliArgs a = new CliArgs(args, 2, Set.of("--clients", "--duration", "--max-tokens", "--seed", "--model",
                "--threads", "--kv-scheme"), Set.of());
        int clients = a.getInt("--clients", 64);
        int seconds = a.getInt("--duration", 60);
        int maxTokens = a.getInt("--max-tokens", 64);
        long seed = a.getInt("--seed", 1);
        String scheme = turboScheme(a.get("--kv-scheme", "turbo:k8v3"));
        List<String> props = List.of("--tqserve.model.path=" + a.get("--model", TqserveMain.DEFAULT_MODEL),
                "--tqserve.backend.threads=" + a.getInt("--threads", 0), "--tqserve.kv.scheme=" + scheme);
        try (ConfigurableApplicationContext ctx = startServer(props)) {
            int port = port(ctx);
            ServingRuntime runtime = ctx.getBean(ServingRuntime.class);
            System.out.println("tqserve bench load: model " + runtime.modelId() + ", "
                    + runtime.loaded().orElseThrow().model().transformer().backend().describe() + ", turbo lane "
                    + scheme + ", " + clients + " streaming clients for " + seconds + " s on 127.0.0.1:" + port
                    + ", max_tokens 8.." + maxTokens + ", 1 in 4 clients on the turbo lane");
            Duration warm = Duration.ofSeconds(Math.max(2, Math.min(10, seconds / 6)));
            LoadClients.run("127.0.0.1", port, new LoadClients.Options(clients, warm, maxTokens, seed + 1, null));
            settle(ctx, Duration.ofSeconds(60));
            long heapStart = heapAfterGc();
            LoadClients.Tally t = LoadClients.run("127.0.0.1", port,
                    new LoadClients.Options(clients, Duration.ofSeconds(seconds), maxTokens, seed, null));
            Settled s = settle(ctx, Duration.ofSeconds(60));
            long heapEnd = heapAfterGc();
            return report(t, s, heapStart, heapEnd) ? 0 : 1;
        }
    }

    /** The turbo lane's scheme: the one asked for, or bf16 when this build has no cache for it yet. */
    static String turboScheme(String asked) {
        KvScheme scheme = KvScheme.parse(asked);
        try (CpuBackend b = CpuBackend.create(1);
                KvCache c = KvCacheFactory.create(scheme, new AttentionShape(1, 2, 1, 128), b, 4)) {
            return asked;
        } catch (UnsupportedOperationException e) {
            System.out.println("note: " + e.getMessage() + "; the turbo lane runs bf16 in this run");
            return "bf16";
        }
    }

    /** Starts the server on a free loopback port with quiet logging; returns once the model is loaded. */
    static ConfigurableApplicationContext startServer(List<String> extraArgs) throws Exception {
        SpringApplication app = ServeCommand.benchApplication();
        List<String> args = new ArrayList<>(List.of("--server.port=0", "--server.address=127.0.0.1"));
        args.addAll(extraArgs);
        ConfigurableApplicationContext ctx = app.run(args.toArray(String[]::new));
        try {
            ctx.getBean(ServingRuntime.class).whenLoaded().get(10, TimeUnit.MINUTES);
        } catch (Exception e) {
            ctx.close();
            throw e;
        }
        return ctx;
    }

    static int port(ConfigurableApplicationContext ctx) {
        return ((WebServerApplicationContext) ctx).getWebServer().getPort();
    }

    /**
     * Waits (up to {@code max}) until no lane runs or queues a sequence and the {@code tqserve.kv.bytes.used}
     * gauge of every lane reads 0; returns the gauges as last read.
     */
    static Settled settle(ConfigurableApplicationContext ctx, Duration max) {
        MeterRegistry registry = ctx.getBean(MeterRegistry.class);
        ServingRuntime runtime = ctx.getBean(ServingRuntime.class);
        long deadline = System.nanoTime() + max.toNanos();
        while (true) {
            Map<Lane.Kind, Long> used = new EnumMap<>(Lane.Kind.class);
            boolean idle = true;
            for (Lane lane : runtime.loaded().orElseThrow().routing().lanes()) {
                long bytes = (long) registry.get("tqserve.kv.bytes.used").tag("lane", lane.kind().wireName()).gauge()
                        .value();
                used.put(lane.kind(), bytes);
                idle &= bytes == 0 && lane.running() == 0 && lane.waiting() == 0 && lane.kvBytesReserved() == 0;
            }
            if (idle || System.nanoTime() > deadline) {
                return new Settled(used, idle);
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20)); // polling a gauge with a deadline
        }
    }

    /**
     * Bytes of live objects on the heap, from the JVM's class histogram (the {@code GC.class_histogram} diagnostic
     * command, which collects first and counts only reachable objects). The heap's "used" figure after
     * {@code System.gc()} is not precise enough for a 10% check: the Parallel collector leaves some dead objects
     * uncompacted ("dead wood"), which moved it by up to 20% between identical runs while the live set moved
     * 0.2%. Falls back to that figure when the diagnostic command is not available.
     */
    static long heapAfterGc() {
        try {
            String histogram = (String) ManagementFactory.getPlatformMBeanServer().invoke(
                    new ObjectName("com.sun.management:type=DiagnosticCommand"), "gcClassHistogram",
                    new Object[] {new String[0]}, new String[] {String[].class.getName()});
            Matcher m = Pattern.compile("(?m)^Total\\s+\\d+\\s+(\\d+)\\s*$").matcher(histogram);
            if (m.find()) {
                return Long.parseLong(m.group(1));
            }
        } catch (JMException | RuntimeException e) {
            // fall through
        }
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /** True when the heap after the run is within the tolerance of the heap before it. */
    static boolean heapWithinTolerance(long start, long end) {
        return end <= start * (1 + HEAP_TOLERANCE);
    }

    private static boolean report(LoadClients.Tally t, Settled s, long heapStart, long heapEnd) {
        long[] all = t.ttfts();
        long[] turbo = t.ttfts(true);
        long[] batched = t.ttfts(false);
        System.out.println();
        System.out.printf("requests            %d in %.1f s (%.1f req/s)%n", t.requests.get(), t.seconds,
                t.requests.get() / t.seconds);
        System.out.printf("streams             %d ended with [DONE] after the finish, %d with an error event, "
                + "%d broken%n", t.streamsDone.get(), t.streamsFailed.get(), t.streamsBroken.get());
        System.out.printf("answers             %d 4xx (%d of them 429), %d 5xx, %d I/O errors%n", t.status4xx.get(),
                t.status429.get(), t.status5xx.get(), t.ioErrors.get());
        System.out.printf("throughput          %.1f generated tok/s (%d tokens)%n", t.tokens.get() / t.seconds,
                t.tokens.get());
        System.out.printf("TTFT all            p50 %.0f ms, p99 %.0f ms (%d streams)%n",
                LoadClients.quantileMillis(all, 0.5), LoadClients.quantileMillis(all, 0.99), all.length);
        System.out.printf("TTFT batched lane   p50 %.0f ms, p99 %.0f ms (%d)%n",
                LoadClients.quantileMillis(batched, 0.5), LoadClients.quantileMillis(batched, 0.99), batched.length);
        System.out.printf("TTFT turbo lane     p50 %.0f ms, p99 %.0f ms (%d)%n",
                LoadClients.quantileMillis(turbo, 0.5), LoadClients.quantileMillis(turbo, 0.99), turbo.length);
        System.out.println("kv bytes used after " + s.kvBytesUsed() + (s.idle() ? " (lanes idle)" : " (NOT idle)"));
        System.out.printf("heap, live objects  %.1f MB after warm-up, %.1f MB after the run (%+.1f %%)%n",
                heapStart / 1e6, heapEnd / 1e6, 100.0 * (heapEnd - heapStart) / heapStart);
        List<String> failed = new ArrayList<>();
        if (t.status5xx.get() > 0) {
            failed.add("5xx answers");
        }
        if (t.streamsBroken.get() > 0) {
            failed.add("streams without [DONE]");
        }
        if (!s.idle()) {
            failed.add("KV bytes still in use");
        }
        if (!heapWithinTolerance(heapStart, heapEnd)) {
            failed.add("heap grew more than 10%");
        }
        if (!t.problems.isEmpty()) {
            System.out.println("first problems: " + t.problems);
        }
        System.out.println(failed.isEmpty() ? "PASS" : "FAIL: " + failed);
        return failed.isEmpty();
    }
}
