package io.tqserve.kv.turbo;

import io.tqserve.kv.KvScheme;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;

/**
 * TurboQuant codec throughput on one core, per token per KV head, beside a plain copy of the bf16 K+V bytes of the
 * same tokens measured in the same run. Every benchmark op is one token (K and V, one head), so JMH's ops/s are
 * tokens/s; GB/s counts the 4·headDim bytes a bf16 K+V pair of that token occupies.
 *
 * Each invocation handles a batch of 1024 consecutive tokens; batches cycle through a window of {@code tokens}
 * tokens, whose size decides whether the cache data and the copy's buffers sit in cache or in DRAM.
 * <ul>
 *   <li>{@code encode}: float32 K and V rows → one entry;</li>
 *   <li>{@code decode}: one entry → float32 K and V rows (original domain, incl. inverse FWHT) into an L1-resident
 *       row, as dequantize-on-fetch attention does token by token;</li>
 *   <li>{@code decodeRotated}: K rows and rotated-domain V rows (no FWHT), what fused attention reads per token;</li>
 *   <li>{@code copyBf16}: {@code MemorySegment.copy} of the batch's 1024·4·headDim bf16 bytes between two off-heap
 *       buffers of the window's size.</li>
 * </ul>
 * Run {@code java -cp target/benchmarks.jar io.tqserve.kv.turbo.TurboCodecBenchmark} for the summary table with
 * GB/s and the ratio to the copy; JMH options on that command line are passed through (e.g. {@code -f 1 -wi 2 -i 3
 * -w 1s -r 1s}, and {@code -bm sample -tu us} for the median and fastest-sample tables).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
    "-Xmx2g"})
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
public class TurboCodecBenchmark {
    /** Tokens per benchmark invocation; JMH ops are tokens. */
    private static final int BATCH = 1024;

    @Param({"turbo:k8v3", "turbo:k4v2"})
    public String scheme;

    @Param({"128", "256"})
    public int headDim;

    /** Window of tokens the batches cycle through (a multiple of 1024): its size decides which cache level holds it. */
    @Param({"8192"})
    public int tokens;

    private int cursor; // first token of the next batch

    private Arena arena;
    private TurboCodec codec;
    private int entry;
    private MemorySegment encoded; // (tokens, entryBytes)
    private MemorySegment bf16Src; // (tokens, 4·headDim)
    private MemorySegment bf16Dst; // (tokens, 4·headDim)
    private float[] k; // (tokens, headDim)
    private float[] v; // (tokens, headDim)
    private float[] rowK; // (headDim)
    private float[] rowV; // (headDim)

    @Setup(Level.Trial)
    public void setup() {
        codec = TurboCodec.of((KvScheme.Turbo) KvScheme.parse(scheme), headDim);
        entry = codec.entryBytes();
        arena = Arena.ofShared();
        if (tokens % BATCH != 0) {
            throw new IllegalArgumentException("tokens must be a multiple of " + BATCH);
        }
        encoded = arena.allocate((long) tokens * entry, 64);
        bf16Src = arena.allocate((long) tokens * 4 * headDim, 64);
        bf16Dst = arena.allocate((long) tokens * 4 * headDim, 64);
        Random rnd = new Random(1);
        k = new float[tokens * headDim];
        v = new float[tokens * headDim];
        for (int i = 0; i < k.length; i++) {
            k[i] = (float) rnd.nextGaussian();
            v[i] = (float) rnd.nextGaussian();
        }
        for (long i = 0; i < bf16Src.byteSize(); i += 8) {
            bf16Src.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
        }
        for (int t = 0; t < tokens; t++) {
            codec.encode(k, t * headDim, v, t * headDim, encoded, (long) t * entry);
        }
        rowK = new float[headDim];
        rowV = new float[headDim];
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    private int nextBatch() {
        int t0 = cursor;
        cursor = (t0 + BATCH) % tokens;
        return t0;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void encode() {
        int t0 = nextBatch();
        for (int t = t0; t < t0 + BATCH; t++) {
            codec.encode(k, t * headDim, v, t * headDim, encoded, (long) t * entry);
        }
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void decode(Blackhole bh) {
        int t0 = nextBatch();
        for (int t = t0; t < t0 + BATCH; t++) {
            codec.decode(encoded, (long) t * entry, rowK, 0, rowV, 0);
            bh.consume(rowK[t & (headDim - 1)] + rowV[t & (headDim - 1)]);
        }
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void decodeRotated(Blackhole bh) {
        int t0 = nextBatch();
        for (int t = t0; t < t0 + BATCH; t++) {
            codec.decodeKey(encoded, (long) t * entry, rowK, 0);
            codec.decodeValueRotated(encoded, (long) t * entry, rowV, 0);
            bh.consume(rowK[t & (headDim - 1)] + rowV[t & (headDim - 1)]);
        }
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void copyBf16() {
        long off = (long) nextBatch() * 4 * headDim;
        MemorySegment.copy(bf16Src, off, bf16Dst, off, (long) BATCH * 4 * headDim);
    }

    /**
     * Runs the benchmarks and prints tokens/s, bf16-equivalent GB/s and the ratio to the copy of the same
     * (scheme, head_dim, window). In sample mode ({@code -bm sample}) every invocation of 1024 tokens is one sample
     * and the table is printed for the median and for the fastest sample: on a machine shared with other jobs the
     * fastest samples of copy and codec are the least disturbed, so their ratio is the steadiest.
     */
    public static void main(String[] args) throws Exception {
        Options cli = new CommandLineOptions(args);
        Options opts = new OptionsBuilder().parent(cli).include(TurboCodecBenchmark.class.getName() + "\\.").build();
        Collection<RunResult> results = new Runner(opts).run();
        boolean sampled = results.stream().anyMatch(r -> r.getPrimaryResult().getScoreUnit().endsWith("/op"));
        if (sampled) {
            table(results, "median sample", 50.0);
            table(results, "fastest sample", 0.0);
        } else {
            table(results, "mean throughput", -1);
        }
    }

    private static void table(Collection<RunResult> results, String title, double percentile) {
        List<String[]> rows = new ArrayList<>();
        for (RunResult r : results) {
            String name = r.getParams().getBenchmark();
            rows.add(new String[] {r.getParams().getParam("scheme"), r.getParams().getParam("headDim"),
                r.getParams().getParam("tokens"), name.substring(name.lastIndexOf('.') + 1),
                Double.toString(tokensPerSecond(r, percentile))});
        }
        System.out.println();
        System.out.println("TurboQuant codec, " + title + " (one core; GB/s counts 4·head_dim bf16 bytes per token)");
        System.out.println();
        System.out.println("| scheme | head_dim | window (tokens) | op | tokens/s | GB/s (bf16 K+V) | ratio vs copy |");
        System.out.println("|---|---|---|---|---|---|---|");
        for (String[] row : rows) {
            int d = Integer.parseInt(row[1]);
            double tps = Double.parseDouble(row[4]);
            double copy = rows.stream().filter(o -> o[0].equals(row[0]) && o[1].equals(row[1]) && o[2].equals(row[2])
                    && o[3].equals("copyBf16")).mapToDouble(o -> Double.parseDouble(o[4])).findFirst().orElse(Double.NaN);
            System.out.println(String.format(Locale.ROOT, "| %s | %d | %s | %s | %.3g | %.2f | %.2f |", row[0], d,
                    row[2], row[3], tps, tps * 4.0 * d / 1e9, tps / copy));
        }
    }

    /** Tokens per second from a result in ops/time (score) or time/op (the given percentile; < 0: the mean). */
    private static double tokensPerSecond(RunResult r, double percentile) {
        Result<?> res = r.getPrimaryResult();
        String unit = res.getScoreUnit();
        int slash = unit.indexOf('/');
        if (unit.endsWith("/op")) {
            double t = percentile < 0 ? res.getScore() : res.getStatistics().getPercentile(percentile);
            if (percentile == 0.0) {
                t = res.getStatistics().getMin();
            }
            return 1.0 / (t * seconds(unit.substring(0, slash)));
        }
        return res.getScore() / seconds(unit.substring(slash + 1));
    }

    private static double seconds(String unit) {
        return switch (unit) {
            case "ns" -> 1e-9;
            case "us" -> 1e-6;
            case "ms" -> 1e-3;
            case "s" -> 1.0;
            case "min" -> 60.0;
            default -> throw new IllegalArgumentException("time unit " + unit);
        };
    }
}
