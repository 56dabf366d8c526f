package io.tqserve.cli;

import io.tqserve.api.CompileAllocation;
import io.tqserve.constraint.ConstraintLimits;
import io.tqserve.constraint.ConstraintState;
import io.tqserve.constraint.Grammar;
import io.tqserve.constraint.SchemaCompiler;
import io.tqserve.constraint.TokenConstraint;
import io.tqserve.constraint.UnsupportedSchemaException;
import io.tqserve.constraint.Vocabulary;
import io.tqserve.model.TokenBytes;
import io.tqserve.model.Tokenizer;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.stream.Stream;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code ./tqserve bench constraint --maskbench DIR [--tokenizer DIR_OR_FILE] [--limit N] [--only TEXT]
 * [--timeout-ms N] [--failures FILE] [--clock cpu|wall] [--jobs N] [--exclude FILE] [--tail FILE] [--ttfm FILE]
 * [--compile-only] [--compile-memory-mb N]}: MaskBench
 * (guidance-ai/jsonschemabench, {@code maskbench/data}) run against
 * the constraint package, measured and scored as MaskBench's own runner and results script do.
 *
 * <p>Per schema file: the schema is compiled (TTFM: schema to the first mask's prerequisites); then, per test
 * instance, the instance text is Python's {@code json.dumps(data)} ({@link PythonJson}), tokenized by the
 * vocabulary without special tokens, and for every token the mask is computed and the token checked and committed
 * (TBM: one mask, as the bitset over the vocabulary that {@code ConstraintState.allowed} returns, plus one commit;
 * what MaskBench's engines compute). An instance is accepted when every token is allowed; a valid instance must also
 * end in an accepting state (MaskBench does not check that; it only makes this runner stricter). Valid accepted
 * and invalid rejected: the schema passes. Categories as MaskBench's results script: passing, compile error,
 * timeout, validation error (a valid instance rejected, or an exception while masking), invalidation error (an
 * invalid instance accepted); plus out of memory and stack overflow, caught per schema so that one schema never
 * ends the run. Percentiles as MaskBench computes them: TTFM over the schemas that compiled plus the timeouts
 * (counted at the timeout), TBM over every mask of the schemas that finished. Runs one schema at a time on one
 * worker thread (the timing thread); the calling thread only waits for it. Times are that thread's CPU time by
 * default ({@code --clock cpu}): on a shared machine wall time also counts the time the thread waits for a core;
 * on an idle core the two agree. The per-schema timeout counts the worker's CPU time as well. {@code --ttfm FILE}
 * writes every schema's TTFM and its compile part, slowest first; {@code --compile-only} skips the masks (a schema
 * that compiles counts as passing), for the TTFM of the full set alone.
 */
final class MaskBench {
    static final long DEFAULT_TIMEOUT_MS = 10_000;
    private static final int NO_BUDGET = 1 << 28; // tokens left: no completion budget in MaskBench
    private static final int WALL_FACTOR = 10;
    private static final JsonMapper JSON = JsonMapper.builder().build();

    enum Status {
        PASSING("passing"), COMPILE_ERROR("compile error"), TIMEOUT("timeout"), OUT_OF_MEMORY("out of memory"),
        STACK_OVERFLOW("stack overflow"), VALIDATION_ERROR("validation error"),
        INVALIDATION_ERROR("invalidation error");

        final String label;

        Status(String label) {
            this.label = label;
        }
    }

    /** One schema file's outcome; {@code maskNs} are the times of its masks (empty unless it finished). */
    record Outcome(String id, Status status, String detail, String keyword, long ttfmNs, long[] maskNs, int tests,
            long compileNs, long compileBytes) {
        Outcome(String id, Status status, String detail, String keyword, long ttfmNs, long[] maskNs, int tests) {
            this(id, status, detail, keyword, ttfmNs, maskNs, tests, 0, -1);
        }
    }

    /**
     * The limits of a MaskBench compile: the defaults (the compile memory of {@code --compile-memory}), with the compile's allocations counted as the server counts
     * them ({@link CompileAllocation}), so a schema beyond the default compile memory is a compile error here too.
     */
    static ConstraintLimits limits(long compileBytes) {
        return ConstraintLimits.DEFAULT.withCompileBytes(compileBytes, CompileAllocation.METER);
    }

    /** The compile limits of this run ({@code --compile-memory}, else the server's default). */
    private static volatile ConstraintLimits LIMITS = limits(ConstraintLimits.DEFAULT_COMPILE_BYTES);

    /** How a schema is turned into masks: the constraint package's API, in one place. */
    record Engine(Vocabulary vocabulary, int[] eos, Function<String, int[]> encoder, LongSupplier clock,
            boolean compileOnly) {
        Engine(Vocabulary vocabulary, int[] eos, Function<String, int[]> encoder, LongSupplier clock) {
            this(vocabulary, eos, encoder, clock, false);
        }

        TokenConstraint compile(Object schema) {
            return new TokenConstraint(SchemaCompiler.compile(schema), vocabulary);
        }

        ConstraintState start(TokenConstraint c) {
            return new ConstraintState(c, eos, -1);
        }
    }

    private MaskBench() {
    }

    static int run(String[] args) throws Exception {
        CliArgs a = new CliArgs(args, 2, Set.of("--maskbench", "--tokenizer", "--limit", "--only", "--timeout-ms",
                "--failures", "--clock", "--jobs", "--exclude", "--tail", "--ttfm", "--compile-memory-mb"),
                Set.of("--compile-only"));
        LIMITS = limits((long) a.getInt("--compile-memory-mb", (int) (ConstraintLimits.DEFAULT_COMPILE_BYTES >> 20))
                << 20);
        Path dir = Path.of(a.require("--maskbench"));
        Path data = Files.isDirectory(dir.resolve("data")) ? dir.resolve("data") : dir;
        List<Path> files = files(data, a.get("--only", ""), a.getInt("--limit", Integer.MAX_VALUE));
        if (files.isEmpty()) {
            throw new IllegalArgumentException("no MaskBench schema files (*.json) in " + data);
        }
        Path tokenizerDir = tokenizerDir(Path.of(a.get("--tokenizer", TqserveMain.DEFAULT_MODEL)));
        long timeoutMs = a.getInt("--timeout-ms", (int) DEFAULT_TIMEOUT_MS);
        Set<String> excluded = excluded(a.get("--exclude", null));
        try (Tokenizer tokenizer = Tokenizer.load(tokenizerDir)) {
            Vocabulary vocabulary = new Vocabulary(TokenBytes.load(tokenizerDir));
            int size = vocabulary.size();
            String clockName = a.get("--clock", "cpu");
            LongSupplier clock = switch (clockName) {
                case "cpu" -> ManagementFactory.getThreadMXBean()::getCurrentThreadCpuTime;
                case "wall" -> System::nanoTime;
                default -> throw new IllegalArgumentException("--clock: cpu or wall, got " + clockName);
            };
            Engine engine = new Engine(vocabulary, tokenizer.eosTokenIds(), t -> tokenizer.encode(t, false), clock,
                    a.has("--compile-only"));
            System.err.printf("maskbench: %d schema files, vocabulary %d tokens (%s), timeout %d ms, %s clock%n",
                    files.size(), size, tokenizerDir, timeoutMs, clockName);
            int jobs = a.getInt("--jobs", 1);
            List<Path> run = files.stream().filter(f -> !excluded.contains(f.getFileName().toString())).toList();
            List<Outcome> ran = jobs <= 1 ? runAll(run, engine, timeoutMs, System.err)
                    : runParallel(run, engine, timeoutMs, jobs, System.err);
            List<Outcome> outcomes = new ArrayList<>(ran);
            for (Path f : files) {
                String id = f.getFileName().toString();
                if (excluded.contains(id)) {
                    System.err.printf("maskbench: %s not run (--exclude), counted as a timeout%n", id);
                    outcomes.add(new Outcome(id, Status.TIMEOUT, "not run (--exclude)", null, timeoutMs * 1_000_000,
                            new long[0], 0));
                }
            }
            System.out.print(table(outcomes, "tqserve"));
            System.out.println();
            System.out.print(keywordTally(outcomes));
            String failures = a.get("--failures", null);
            if (failures != null) {
                Files.writeString(Path.of(failures), failureList(outcomes), StandardCharsets.UTF_8);
            }
            String tail = a.get("--tail", null);
            if (tail != null) {
                Files.writeString(Path.of(tail), tailList(outcomes), StandardCharsets.UTF_8);
            }
            largestCompile(outcomes).ifPresent(o -> System.err.printf("maskbench: the most a passing schema's compile"
                    + " allocated: %.1f MB (%s; compile memory budget %d MB)%n", o.compileBytes() / 1048576.0, o.id(),
                    LIMITS.compileBytes() >> 20));
            String ttfmFile = a.get("--ttfm", null);
            if (ttfmFile != null) {
                Files.writeString(Path.of(ttfmFile), ttfmList(outcomes), StandardCharsets.UTF_8);
            }
        }
        return 0;
    }

    /**
     * Schema file names (one a line, {@code #} comments) not to run, each counted as a timeout: schemas whose mask
     * computation is known not to stop (a thread that ignores its interrupt keeps a core busy after its timeout).
     */
    static Set<String> excluded(String file) throws IOException {
        if (file == null) {
            return Set.of();
        }
        Set<String> ids = new java.util.HashSet<>();
        for (String line : Files.readAllLines(Path.of(file), StandardCharsets.UTF_8)) {
            String id = line.replaceAll("#.*", "").strip();
            if (!id.isEmpty()) {
                ids.add(id.endsWith(".json") ? id : id + ".json");
            }
        }
        return ids;
    }

    /** A tokenizer.json file or the folder holding it. */
    static Path tokenizerDir(Path p) {
        if (Files.isRegularFile(p)) {
            if (!p.getFileName().toString().equals("tokenizer.json")) {
                throw new IllegalArgumentException("--tokenizer: expected a tokenizer.json file or its folder: " + p);
            }
            Path parent = p.toAbsolutePath().getParent();
            return parent;
        }
        if (!Files.isRegularFile(p.resolve("tokenizer.json"))) {
            throw new IllegalArgumentException("--tokenizer: no tokenizer.json in " + p);
        }
        return p;
    }

    static List<Path> files(Path data, String only, int limit) throws IOException {
        try (Stream<Path> s = Files.list(data)) {
            return s.filter(p -> p.getFileName().toString().endsWith(".json"))
                    .filter(p -> p.getFileName().toString().contains(only))
                    .sorted().limit(limit).toList();
        }
    }

    static List<Outcome> runAll(List<Path> files, Engine engine, long timeoutMs, PrintStream progress)
            throws InterruptedException {
        List<Outcome> out = new ArrayList<>();
        Worker worker = new Worker();
        int abandoned = 0;
        long start = System.nanoTime();
        try {
            for (int i = 0; i < files.size(); i++) {
                Path f = files.get(i);
                String id = f.getFileName().toString();
                Future<Outcome> job = worker.pool.submit(() -> one(id, f, engine));
                Outcome o = null;
                long cpu0 = worker.cpuNanos();
                long wall0 = System.nanoTime();
                while (o == null) {
                    try {
                        o = job.get(20, TimeUnit.MILLISECONDS);
                    } catch (TimeoutException e) {
                        long cpuMs = (worker.cpuNanos() - cpu0) / 1_000_000;
                        long wallMs = (System.nanoTime() - wall0) / 1_000_000;
                        if (cpuMs > timeoutMs || wallMs > WALL_FACTOR * timeoutMs) {
                            job.cancel(true);
                            o = new Outcome(id, Status.TIMEOUT, "over " + timeoutMs + " ms (" + cpuMs + " ms CPU, "
                                    + wallMs + " ms wall)", null, timeoutMs * 1_000_000, new long[0], 0);
                            worker.pool.shutdownNow();
                            if (!worker.pool.awaitTermination(2, TimeUnit.SECONDS)) {
                                // the compile ignores interrupts: leave its thread (a daemon), go on with a new one
                                abandoned++;
                                progress.printf("maskbench: %s did not stop after its timeout (%d abandoned "
                                        + "threads)%n", id, abandoned);
                            }
                            worker = new Worker();
                        }
                    } catch (ExecutionException e) {
                        o = new Outcome(id, Status.VALIDATION_ERROR, "EXN " + e.getCause(), null, 0, new long[0], 0);
                    }
                }
                out.add(o);
                if ((i + 1) % 500 == 0 || i + 1 == files.size()) {
                    progress.printf("maskbench: %d/%d schemas, %.1f s%n", i + 1, files.size(),
                            (System.nanoTime() - start) / 1e9);
                }
            }
        } finally {
            worker.pool.shutdownNow();
        }
        return out;
    }

    /**
     * {@code jobs} timing threads, each running every jobs-th schema as {@link #runAll} does; the outcomes in file
     * order. Per-thread CPU time keeps each measurement that of one thread on one core.
     */
    static List<Outcome> runParallel(List<Path> files, Engine engine, long timeoutMs, int jobs, PrintStream progress)
            throws InterruptedException {
        List<List<Outcome>> parts = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int j = 0; j < jobs; j++) {
            List<Path> shard = new ArrayList<>();
            for (int k = j; k < files.size(); k += jobs) {
                shard.add(files.get(k));
            }
            List<Outcome> out = new ArrayList<>();
            parts.add(out);
            Thread t = new Thread(() -> {
                try {
                    out.addAll(runAll(shard, engine, timeoutMs, progress));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "maskbench-shard-" + j);
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        List<Outcome> all = new ArrayList<>();
        for (int k = 0; k < files.size(); k++) {
            List<Outcome> part = parts.get(k % jobs);
            all.add(part.get(k / jobs));
        }
        return all;
    }

    /**
     * The timing thread. The timeout is counted in its CPU time (a loaded machine does not turn slow schemas into
     * timeouts), with a wall-time stop at {@link #WALL_FACTOR} times the timeout.
     */
    private static final class Worker {
        final ExecutorService pool;
        private volatile long threadId = -1;

        Worker() {
            pool = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(null, r, "maskbench", 64L << 20);
                t.setDaemon(true);
                threadId = t.threadId();
                return t;
            });
        }

        long cpuNanos() {
            long id = threadId;
            return id < 0 ? 0 : Math.max(0, ManagementFactory.getThreadMXBean().getThreadCpuTime(id));
        }
    }

    /** One schema file: compile, then every test instance token by token. */
    static Outcome one(String id, Path file, Engine engine) throws IOException {
        JsonNode doc = JSON.readTree(file.toFile());
        Object schema = JSON.treeToValue(doc.get("schema"), Object.class);
        JsonNode tests = doc.path("tests");
        List<String> texts = new ArrayList<>();
        List<int[]> tokens = new ArrayList<>();
        for (JsonNode t : tests) {
            String text = PythonJson.dumps(t.get("data"));
            texts.add(text);
            tokens.add(engine.encoder().apply(text));
        }
        LongSupplier clock = engine.clock();
        long t0 = clock.getAsLong();
        long compiled;
        TokenConstraint c;
        long allocated;
        CompileAllocation.begin();
        try {
            Grammar g = SchemaCompiler.compile(schema, LIMITS);
            compiled = clock.getAsLong() - t0;
            c = new TokenConstraint(g, engine.vocabulary(), LIMITS);
            allocated = CompileAllocation.METER.allocatedBytes();
        } catch (UnsupportedSchemaException e) {
            return new Outcome(id, Status.COMPILE_ERROR, e.getMessage(), e.keyword(), 0, new long[0], tests.size());
        } catch (OutOfMemoryError e) {
            return new Outcome(id, Status.OUT_OF_MEMORY, "compile: " + e, null, 0, new long[0], tests.size());
        } catch (StackOverflowError e) {
            return new Outcome(id, Status.STACK_OVERFLOW, "compile", null, 0, new long[0], tests.size());
        } catch (RuntimeException e) {
            return new Outcome(id, Status.COMPILE_ERROR, e.toString(), "(" + e.getClass().getSimpleName() + ")", 0,
                    new long[0], tests.size());
        } finally {
            CompileAllocation.end();
        }
        long ttfm = clock.getAsLong() - t0;
        if (engine.compileOnly()) {
            return new Outcome(id, Status.PASSING, "compiled", null, ttfm, new long[0], tests.size(), compiled,
                    allocated);
        }
        int vocab = engine.vocabulary().size();
        long[] times = new long[64];
        int n = 0;
        Status status = Status.PASSING;
        String detail = "";
        try {
            for (int i = 0; i < tests.size() && status == Status.PASSING; i++) {
                boolean valid = tests.get(i).path("valid").asBoolean();
                int[] toks = tokens.get(i);
                ConstraintState st = engine.start(c);
                boolean accepted = true;
                int at = 0;
                try {
                    for (; at < toks.length; at++) {
                        int tok = toks[at];
                        long s = clock.getAsLong();
                        long[] allowed = st.allowed(NO_BUDGET);
                        boolean ok = tok < vocab && (allowed[tok >>> 6] & (1L << tok)) != 0;
                        if (ok) {
                            st.advance(tok);
                        }
                        long e = clock.getAsLong() - s;
                        if (n == times.length) {
                            times = Arrays.copyOf(times, n * 2);
                        }
                        times[n++] = e;
                        if (!ok) {
                            accepted = false;
                            break;
                        }
                    }
                } catch (RuntimeException e) {
                    status = Status.VALIDATION_ERROR;
                    detail = "test #" + i + ": EXN " + e;
                    break;
                }
                if (valid && !accepted) {
                    status = Status.VALIDATION_ERROR;
                    detail = "test #" + i + ": should accept but didn't (token " + at + " of " + toks.length + ": "
                            + context(engine, toks, at) + ")";
                } else if (valid && !st.accepting()) {
                    status = Status.VALIDATION_ERROR;
                    detail = "test #" + i + ": should accept but didn't (the text is accepted but not complete)";
                } else if (!valid && accepted) {
                    status = Status.INVALIDATION_ERROR;
                    detail = "test #" + i + ": should reject but didn't: " + abbreviate(texts.get(i), 200);
                }
            }
        } catch (OutOfMemoryError e) {
            return new Outcome(id, Status.OUT_OF_MEMORY, "masks: " + e, null, ttfm, new long[0], tests.size());
        } catch (StackOverflowError e) {
            return new Outcome(id, Status.STACK_OVERFLOW, "masks", null, ttfm, new long[0], tests.size());
        }
        return new Outcome(id, status, detail, null, ttfm, Arrays.copyOf(times, n), tests.size(), compiled,
                allocated);
    }

    /** The text up to the rejected token and the token, for the failure list. */
    private static String context(Engine engine, int[] toks, int at) {
        StringBuilder sb = new StringBuilder();
        for (int i = Math.max(0, at - 8); i < at; i++) {
            sb.append(bytes(engine, toks[i]));
        }
        return abbreviate(sb.toString(), 120) + " >>" + (at < toks.length ? bytes(engine, toks[at]) : "") + "<<";
    }

    private static String bytes(Engine engine, int tok) {
        byte[] b = tok < engine.vocabulary().size() ? engine.vocabulary().bytes(tok) : null;
        return b == null ? "<" + tok + ">" : new String(b, StandardCharsets.UTF_8);
    }

    private static String abbreviate(String s, int max) {
        String one = s.replace("\n", "\\n");
        return one.length() <= max ? one : one.substring(0, max) + "...";
    }

    /** MaskBench's result table (its row order and percentile rule), one column of values in microseconds. */
    static String table(List<Outcome> outcomes, String name) {
        long masks = 0;
        for (Outcome o : outcomes) {
            masks += o.maskNs().length;
        }
        long[] tbm = new long[Math.toIntExact(masks)];
        int k = 0;
        List<Long> ttfmList = new ArrayList<>();
        Map<Status, Integer> counts = new EnumMap<>(Status.class);
        for (Outcome o : outcomes) {
            for (long ns : o.maskNs()) {
                tbm[k++] = ns / 1000;
            }
            counts.merge(o.status(), 1, Integer::sum);
            if (o.status() != Status.COMPILE_ERROR && o.status() != Status.OUT_OF_MEMORY
                    && o.status() != Status.STACK_OVERFLOW) {
                ttfmList.add(o.ttfmNs() / 1000);
            }
        }
        long[] ttfm = ttfmList.stream().mapToLong(Long::longValue).toArray();
        Arrays.sort(tbm);
        Arrays.sort(ttfm);
        Map<String, String> rows = new LinkedHashMap<>();
        percentiles("TBM", tbm, rows);
        percentiles("TTFM", ttfm, rows);
        rows.put("tokens", String.format("%,d", masks));
        rows.put("schemas", String.format("%,d", outcomes.size()));
        for (Status s : Status.values()) {
            rows.put(s.label, String.format("%,d", counts.getOrDefault(s, 0)));
        }
        int w0 = "metric".length();
        int w1 = name.length();
        for (Map.Entry<String, String> e : rows.entrySet()) {
            w0 = Math.max(w0, e.getKey().length());
            w1 = Math.max(w1, e.getValue().length());
        }
        StringBuilder sb = new StringBuilder();
        sb.append(String.format("| %-" + w0 + "s | %" + w1 + "s |%n", "metric", name));
        sb.append("|:").append("-".repeat(w0 + 1)).append("|").append("-".repeat(w1 + 1)).append(":|\n");
        for (Map.Entry<String, String> e : rows.entrySet()) {
            sb.append(String.format("| %-" + w0 + "s | %" + w1 + "s |%n", e.getKey(), e.getValue()));
        }
        return sb.toString();
    }

    private static void percentiles(String what, long[] sorted, Map<String, String> rows) {
        long sum = 0;
        for (long v : sorted) {
            sum += v;
        }
        rows.put(what + " avg", sorted.length == 0 ? "-" : String.format("%,d", sum / sorted.length));
        for (String p : List.of("25", "50", "75", "90", "95", "99", "99.9", "100")) {
            rows.put(what + " p" + p, sorted.length == 0 ? "-" : String.format("%,d", percentile(sorted,
                    Double.parseDouble(p))));
        }
    }

    /** MaskBench's {@code get_p}: element {@code int(len * p / 100)}, clamped to the last. */
    static long percentile(long[] sorted, double p) {
        int idx = (int) (sorted.length * p / 100);
        return sorted[Math.min(idx, sorted.length - 1)];
    }

    /** Compile errors per keyword the compiler named, most frequent first. */
    static String keywordTally(List<Outcome> outcomes) {
        Map<String, Integer> byKeyword = new TreeMap<>();
        for (Outcome o : outcomes) {
            if (o.status() == Status.COMPILE_ERROR) {
                byKeyword.merge(o.keyword() == null ? "(unknown)" : o.keyword(), 1, Integer::sum);
            }
        }
        StringBuilder sb = new StringBuilder("| compile errors by keyword | schemas |\n|:--|--:|\n");
        byKeyword.entrySet().stream()
                .sorted((x, y) -> y.getValue() != x.getValue().intValue() ? y.getValue() - x.getValue()
                        : x.getKey().compareTo(y.getKey()))
                .forEach(e -> sb.append("| ").append(e.getKey()).append(" | ").append(String.format("%,d",
                        e.getValue())).append(" |\n"));
        return sb.toString();
    }

    /**
     * Where the TBM tail comes from: one line per schema with masks of 1 ms or more (id, masks, masks of 1 ms or
     * more, slowest mask in microseconds), most such masks first.
     */
    static String tailList(List<Outcome> outcomes) {
        StringBuilder sb = new StringBuilder();
        outcomes.stream().filter(o -> slow(o) > 0)
                .sorted(java.util.Comparator.comparingLong(MaskBench::slow).reversed())
                .forEach(o -> sb.append(o.id()).append('\t').append(o.maskNs().length).append('\t').append(slow(o))
                        .append('\t').append(Arrays.stream(o.maskNs()).max().orElse(0) / 1000).append('\n'));
        return sb.toString();
    }

    private static long slow(Outcome o) {
        return Arrays.stream(o.maskNs()).filter(ns -> ns >= 1_000_000).count();
    }

    /**
     * One line per schema with a TTFM (compiled, or timed out), slowest first: TTFM, of which the schema compile
     * (the rest builds the constraint's start state and closing plan), in microseconds; id; status; the bytes the
     * compile allocated (schema compile and constraint), in KB.
     */
    static String ttfmList(List<Outcome> outcomes) {
        StringBuilder sb = new StringBuilder("# ttfm_us\tcompile_us\tid\tstatus\tcompile_alloc_kb\n");
        outcomes.stream().filter(o -> o.status() != Status.COMPILE_ERROR && o.status() != Status.OUT_OF_MEMORY
                        && o.status() != Status.STACK_OVERFLOW)
                .sorted((x, y) -> Long.compare(y.ttfmNs(), x.ttfmNs()))
                .forEach(o -> sb.append(o.ttfmNs() / 1000).append('\t').append(o.compileNs() / 1000).append('\t')
                        .append(o.id()).append('\t').append(o.status().label).append('\t')
                        .append(o.compileBytes() < 0 ? "" : String.valueOf(o.compileBytes() >> 10)).append('\n'));
        return sb.toString();
    }

    /** The passing schema whose compile allocated the most, if the JVM counted allocations. */
    static java.util.Optional<Outcome> largestCompile(List<Outcome> outcomes) {
        return outcomes.stream().filter(o -> o.status() == Status.PASSING && o.compileBytes() >= 0)
                .max(java.util.Comparator.comparingLong(Outcome::compileBytes));
    }

    /** One line per schema that did not pass: id, status, why. */
    static String failureList(List<Outcome> outcomes) {
        StringBuilder sb = new StringBuilder();
        for (Outcome o : outcomes) {
            if (o.status() != Status.PASSING) {
                sb.append(o.id()).append('\t').append(o.status().label).append('\t')
                        .append(o.keyword() == null ? "" : o.keyword()).append('\t')
                        .append(abbreviate(o.detail(), 400)).append('\n');
            }
        }
        return sb.toString();
    }
}
