package io.tqserve.cli;

import io.tqserve.routing.ServingRuntime;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * {@code ./tqserve bench constraint --attack [--model DIR] [--rounds N] [--samples N] [--parallel N]
 * [--threads N]}: what structured-output attacks cost an unrelated request, in one run. Starts the server in this
 * JVM on a loopback port, then per round measures an unrelated completion ({@code /v1/completions}, 2 tokens,
 * greedy) {@code samples} times alone ("normal"), and {@code samples} times while {@code parallel} clients send the
 * attack schemas of issue 29 without pause ({@code maxLength} 10000, {@code maxItems} 20000, a 10-level
 * {@code $ref} fan-out, 12 optional object properties, a 20000-entry {@code enum}; each with a fresh title, so
 * every one is a cache miss and compiles; 64 constrained tokens each), and {@code samples} times while the same
 * clients send the same chat requests without a schema (what the generation load alone costs: the unrelated
 * request shares the lanes' steps with them). Rounds alternate the three so machine load hits each. Prints the
 * median latencies, their ratios, and both loaded arms' requests, outcomes and completion tokens (the load each
 * put on the lanes: a chat request of either arm may end before its 64 tokens), the wall time of the arm's
 * samples, the JVM's collection time within it and the CPU time each group of the server's threads took in it.
 */
public final class ConstraintAttackBenchmark {
    private static final String UNRELATED = "{\"model\":\"m\",\"prompt\":\"The ls command\",\"max_tokens\":2,"
            + "\"temperature\":0}";

    private ConstraintAttackBenchmark() {
    }

    /**
     * The five attack schemas of issue 29 ({@code maxLength} 10000, {@code maxItems} 20000, a 10-level {@code $ref}
     * fan-out, 12 optional object properties, a 20000-entry {@code enum}); StructuredOutputAttackTest sends the same.
     */
    public static List<String> attacks() {
        StringBuilder refs = new StringBuilder("{\"$defs\": {\"l10\": {\"type\": \"integer\"}");
        for (int i = 9; i >= 0; i--) {
            refs.append(", \"l").append(i).append("\": {\"type\": \"object\", \"properties\": {\"a\": {\"$ref\": "
                    + "\"#/$defs/l").append(i + 1).append("\"}, \"b\": {\"$ref\": \"#/$defs/l").append(i + 1)
                    .append("\"}}, \"additionalProperties\": false}");
        }
        refs.append("}, \"$ref\": \"#/$defs/l0\"}");
        StringBuilder props = new StringBuilder("{\"type\": \"object\", \"properties\": {");
        for (int i = 0; i < 12; i++) {
            props.append(i == 0 ? "" : ", ").append("\"p").append(i).append("\": {\"type\": \"object\"}");
        }
        props.append("}}");
        StringBuilder en = new StringBuilder("{\"enum\": [");
        for (int i = 0; i < 20_000; i++) {
            en.append(i == 0 ? "" : ", ").append("\"value-").append(i).append('"');
        }
        en.append("]}");
        return List.of("{\"type\": \"string\", \"maxLength\": 10000}",
                "{\"type\": \"array\", \"items\": {\"type\": \"integer\"}, \"maxItems\": 20000}",
                refs.toString(), props.toString(), en.toString());
    }

    static int run(String[] args) throws Exception {
        CliArgs a = new CliArgs(args, 2, Set.of("--model", "--rounds", "--samples", "--parallel", "--threads"),
                Set.of("--attack"));
        int rounds = a.getInt("--rounds", 3);
        int samples = a.getInt("--samples", 10);
        int parallel = a.getInt("--parallel", 6);
        SpringApplication app = ServeCommand.benchApplication();
        try (ConfigurableApplicationContext ctx = app.run("--server.port=0", "--server.address=127.0.0.1",
                "--tqserve.model.path=" + a.get("--model", TqserveMain.DEFAULT_MODEL),
                "--tqserve.backend.threads=" + a.getInt("--threads", 0))) {
            ServingRuntime runtime = ctx.getBean(ServingRuntime.class);
            runtime.whenLoaded().get(10, TimeUnit.MINUTES);
            int port = ((WebServerApplicationContext) ctx).getWebServer().getPort();
            List<String> attacks = attacks();
            AtomicLong unique = new AtomicLong();
            // warm-up: the unrelated path and every attack once
            phase("server ready; the bench's warm-up requests");
            for (int i = 0; i < 20; i++) {
                unrelated(port);
            }
            Map<String, AtomicInteger> outcomes = new ConcurrentHashMap<>();
            for (String s : attacks) {
                attack(port, s, unique, outcomes);
            }
            outcomes.clear();
            long[] normal = new long[rounds * samples];
            long[] attacked = new long[rounds * samples];
            long[] plain = new long[rounds * samples];
            AtomicInteger attacksDone = new AtomicInteger();
            Map<String, AtomicInteger> plainOutcomes = new ConcurrentHashMap<>();
            AtomicInteger plainDone = new AtomicInteger();
            for (int r = 0; r < rounds; r++) {
                phase("round " + (r + 1) + ": alone");
                for (int i = 0; i < samples; i++) {
                    normal[r * samples + i] = unrelated(port);
                }
                phase("round " + (r + 1) + ": under attack");
                loaded(port, attacks, unique, outcomes, attacksDone, parallel, false, attacked, r * samples, samples);
                phase("round " + (r + 1) + ": the same load without schemas");
                loaded(port, attacks, unique, plainOutcomes, plainDone, parallel, true, plain, r * samples, samples);
            }
            phase("done");
            double n = median(normal) / 1e6;
            double u = median(attacked) / 1e6;
            double p = median(plain) / 1e6;
            System.out.printf("bench constraint --attack: %s, %d rounds x %d samples, %d attack clients, %d "
                    + "processors, load average %.2f%n", runtime.modelId(), rounds, samples, parallel,
                    Runtime.getRuntime().availableProcessors(),
                    ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
            System.out.printf("| unrelated 2-token completion | median ms | p90 ms |%n|---|---|---|%n");
            System.out.printf("| alone | %.1f | %.1f |%n", n, pct(normal, 0.9) / 1e6);
            System.out.printf("| under attack (%d clients, schemas) | %.1f | %.1f |%n", parallel, u,
                    pct(attacked, 0.9) / 1e6);
            System.out.printf("| under the same load without schemas | %.1f | %.1f |%n", p, pct(plain, 0.9) / 1e6);
            System.out.printf("ratio under attack / alone: %.2fx; under attack / same load without schemas: %.2fx "
                    + "(medians)%n", u / n, u / p);
            report("attack requests: " + attacksDone.get(), outcomes);
            report("requests without schemas: " + plainDone.get(), plainOutcomes);
        }
        return 0;
    }

    /**
     * Logs the start of a phase to stderr with the time (UTC), so a JIT or GC log of the same run (e.g. a JFR
     * recording's compilations) can be split by phase.
     */
    private static void phase(String what) {
        System.err.println("bench constraint --attack: " + java.time.Instant.now() + " " + what);
    }

    /**
     * Measures {@code samples} unrelated completions into {@code out} from {@code at} while {@code parallel} clients
     * send attacks ({@code plain}: the same chat requests without a schema) without pause.
     */
    private static void loaded(int port, List<String> attacks, AtomicLong unique, Map<String, AtomicInteger> outcomes,
            AtomicInteger done, int parallel, boolean plain, long[] out, int at, int samples) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> clients = new ArrayList<>();
        java.util.concurrent.CountDownLatch sending = new java.util.concurrent.CountDownLatch(parallel);
        for (int c = 0; c < parallel; c++) {
            int first = c;
            clients.add(Thread.ofPlatform().daemon().start(() -> {
                sending.countDown();
                for (int k = first; !stop.get(); k++) {
                    attack(port, plain ? null : attacks.get(k % attacks.size()), unique, outcomes);
                    done.incrementAndGet();
                }
            }));
        }
        sending.await(); // every client is sending its first request
        long gc0 = gcMillis();
        Map<Long, Long> cpu0 = threadCpu();
        Map<String, long[]> wait0 = runQueueWait();
        long t0 = System.nanoTime();
        for (int i = 0; i < samples; i++) {
            out[at + i] = unrelated(port);
        }
        outcomes.computeIfAbsent(ARM_MS, k -> new AtomicInteger()).addAndGet((int) ((System.nanoTime() - t0) / 1_000_000));
        outcomes.computeIfAbsent(GC_MS, k -> new AtomicInteger()).addAndGet((int) (gcMillis() - gc0));
        cpuByGroup(cpu0, threadCpu()).forEach((group, ms) -> outcomes.computeIfAbsent(CPU_MS + group,
                k -> new AtomicInteger()).addAndGet(ms));
        runQueueWait().forEach((group, w) -> {
            long[] before = wait0.getOrDefault(group, new long[2]);
            outcomes.computeIfAbsent(SCHED_MS + group, k -> new AtomicInteger())
                    .addAndGet((int) ((w[0] - before[0]) / 1_000_000));
            outcomes.computeIfAbsent(WAIT_MS + group, k -> new AtomicInteger())
                    .addAndGet((int) ((w[1] - before[1]) / 1_000_000));
        });
        stop.set(true);
        for (Thread t : clients) {
            t.join();
        }
    }

    /** One loaded arm: its outcomes and sums, then the CPU ms of the server's thread groups, most first. */
    private static void report(String head, Map<String, AtomicInteger> outcomes) {
        Map<String, Integer> sums = new TreeMap<>();
        outcomes.forEach((k, v) -> {
            if (!k.startsWith(CPU_MS) && !k.startsWith(WAIT_MS) && !k.startsWith(SCHED_MS)) {
                sums.put(k, v.get());
            }
        });
        System.out.println(head + ", outcomes " + sums);
        System.out.println("  server threads' CPU ms within the samples: " + groups(outcomes, CPU_MS));
        System.out.println("  all threads' ms on a core (Linux schedstat, JIT and GC included): "
                + groups(outcomes, SCHED_MS));
        System.out.println("  ms they waited runnable for a core: " + groups(outcomes, WAIT_MS));
    }

    private static String groups(Map<String, AtomicInteger> outcomes, String prefix) {
        List<Map.Entry<String, Integer>> g = new ArrayList<>();
        outcomes.forEach((k, v) -> {
            if (k.startsWith(prefix) && v.get() > 0) {
                g.add(Map.entry(k.substring(prefix.length()), v.get()));
            }
        });
        g.sort(Map.Entry.<String, Integer>comparingByValue().reversed());
        return g.stream().map(e -> e.getKey() + " " + e.getValue()).collect(java.util.stream.Collectors.joining(", "));
    }

    private static final java.lang.management.ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    /** CPU time of every live thread of this JVM, by thread id. */
    private static Map<Long, Long> threadCpu() {
        Map<Long, Long> cpu = new java.util.HashMap<>();
        for (long id : THREADS.getAllThreadIds()) {
            long ns = THREADS.getThreadCpuTime(id);
            if (ns >= 0) {
                cpu.put(id, ns);
            }
        }
        return cpu;
    }

    /**
     * CPU milliseconds the threads took between two {@link #threadCpu} snapshots, by thread group (the thread's
     * name without its trailing number: tqserve-kernel, tqserve-constraint, reactor-http-nio, ...); the benchmark's
     * own client threads and threads that ended in between are not counted.
     */
    private static Map<String, Integer> cpuByGroup(Map<Long, Long> before, Map<Long, Long> after) {
        Map<String, Integer> ms = new TreeMap<>();
        for (Map.Entry<Long, Long> e : after.entrySet()) {
            java.lang.management.ThreadInfo info = THREADS.getThreadInfo(e.getKey());
            if (info == null) {
                continue;
            }
            String group = info.getThreadName().replaceAll("[-#]?\\d+$", "");
            if (group.startsWith("Thread") || group.equals("main")) {
                continue; // the benchmark's clients
            }
            ms.merge(group, (int) ((e.getValue() - before.getOrDefault(e.getKey(), 0L)) / 1_000_000), Integer::sum);
        }
        return ms;
    }

    /**
     * Linux: the time this process's threads have run on a core and waited runnable for one so far (fields 1 and 2
     * of {@code /proc/self/task/TID/schedstat}), in ns, by thread group (the kernel's 15-character thread name
     * without its trailing number; JIT compiler and GC threads included); empty where that file cannot be read.
     */
    private static Map<String, long[]> runQueueWait() {
        Map<String, long[]> wait = new java.util.HashMap<>();
        java.nio.file.Path tasks = java.nio.file.Path.of("/proc/self/task");
        if (!java.nio.file.Files.isDirectory(tasks)) {
            return wait;
        }
        try (java.util.stream.Stream<java.nio.file.Path> all = java.nio.file.Files.list(tasks)) {
            for (java.nio.file.Path t : (Iterable<java.nio.file.Path>) all::iterator) {
                try {
                    String name = java.nio.file.Files.readString(t.resolve("comm")).trim();
                    String[] f = java.nio.file.Files.readString(t.resolve("schedstat")).trim().split(" ");
                    String group = name.replaceAll("[-#]?\\d+$", "");
                    if (group.startsWith("Thread") || group.equals("main") || group.equals("java")) {
                        continue; // the benchmark's clients
                    }
                    long[] w = wait.computeIfAbsent(group, k -> new long[2]);
                    w[0] += Long.parseLong(f[0]);
                    w[1] += Long.parseLong(f[1]);
                } catch (java.io.IOException | RuntimeException e) {
                    // the thread ended in between
                }
            }
        } catch (java.io.IOException e) {
            return new java.util.HashMap<>();
        }
        return wait;
    }

    /** Collection time of every collector of this JVM so far (the server runs in it). */
    private static long gcMillis() {
        long ms = 0;
        for (java.lang.management.GarbageCollectorMXBean b : ManagementFactory.getGarbageCollectorMXBeans()) {
            ms += Math.max(0, b.getCollectionTime());
        }
        return ms;
    }

    private static long unrelated(int port) {
        try (Http1Client c = new Http1Client("127.0.0.1", port, 600_000)) {
            long t0 = System.nanoTime();
            Http1Client.Response r = c.exchange(Http1Client.postJson("/v1/completions", UNRELATED));
            long t = System.nanoTime() - t0;
            if (r.status() != 200) {
                throw new IllegalStateException("unrelated completion: " + r.status() + " " + r.text());
            }
            return t;
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static void attack(int port, String schema, AtomicLong unique, Map<String, AtomicInteger> outcomes) {
        String format = schema == null ? "" : ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":"
                + "{\"name\":\"a\",\"schema\":{\"title\": \"attack-" + unique.incrementAndGet() + "\", "
                + schema.substring(1) + "}}";
        String body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":64,"
                + "\"temperature\":1" + format + "}";
        try (Http1Client c = new Http1Client("127.0.0.1", port, 600_000)) {
            Http1Client.Response r = c.exchange(Http1Client.postJson("/v1/chat/completions", body));
            String kind = r.status() == 200 ? "200" : r.status() + " " + code(r.text());
            outcomes.computeIfAbsent(kind, k -> new AtomicInteger()).incrementAndGet();
            if (r.status() == 200) {
                outcomes.computeIfAbsent(TOKENS, k -> new AtomicInteger()).addAndGet(completionTokens(r.text()));
            }
        } catch (java.io.IOException e) {
            outcomes.computeIfAbsent("io error", k -> new AtomicInteger()).incrementAndGet();
        }
    }

    /** The key of {@code outcomes} under which the completion tokens of the 200 answers are summed. */
    private static final String TOKENS = "completion tokens";
    /** Keys of {@code outcomes}: the wall time of the arm's unrelated samples, and the JVM's GC time within it. */
    private static final String ARM_MS = "samples' wall ms";
    private static final String GC_MS = "gc ms within";
    /** Prefix of the {@code outcomes} keys of the CPU ms each server thread group took within the samples. */
    private static final String CPU_MS = "cpu ms ";
    /** Prefix of the {@code outcomes} keys of the ms each server thread group waited runnable for a core. */
    private static final String WAIT_MS = "wait ms ";
    /** Prefix of the {@code outcomes} keys of the ms each server thread group ran on a core (Linux schedstat). */
    private static final String SCHED_MS = "sched ms ";

    private static int completionTokens(String body) {
        int i = body.indexOf("\"completion_tokens\":");
        if (i < 0) {
            return 0;
        }
        int j = i + 20;
        int k = j;
        while (k < body.length() && Character.isDigit(body.charAt(k))) {
            k++;
        }
        return k > j ? Integer.parseInt(body.substring(j, k)) : 0;
    }

    private static String code(String body) {
        int i = body.indexOf("\"code\":");
        return i < 0 ? "?" : body.substring(i + 7, Math.min(body.length(), body.indexOf(',', i + 7) < 0
                ? body.length() : body.indexOf(',', i + 7)));
    }

    private static double median(long[] v) {
        return pct(v, 0.5);
    }

    private static double pct(long[] v, double p) {
        long[] s = v.clone();
        Arrays.sort(s);
        return s[Math.min(s.length - 1, (int) Math.floor(p * (s.length - 1) + 0.5))];
    }
}
