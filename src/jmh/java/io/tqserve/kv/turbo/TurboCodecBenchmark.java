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
 * <ul>
 *   <li>{@code encode}: float32 K and V rows → one entry, over a window of {@code tokens} entries;</li>
 *   <li>{@code decode}: one entry → float32 K and V rows (original domain, incl. inverse FWHT) into an L1-resident
 *       row, as dequantize-on-fetch attention does token by token;</li>
 *   <li>{@code decodeRotated}: K rows and rotated-domain V rows (no FWHT), what fused attention reads per token;</li>
 *   <li>{@code copyBf16}: {@code MemorySegment.copy} of tokens·4·headDim bytes between two off-heap buffers.</li>
 * </ul>
 * Run {@code java -cp target/benchmarks.jar io.tqserve.kv.turbo.TurboCodecBenchmark} for the summary table with
 * GB/s and the ratio to the copy; JMH options on that command line are passed through (e.g. {@code -f 1 -wi 2 -i 3
 * -w 1s -r 1s}).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
    "-Xmx2g"})
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
public class TurboCodecBenchmark {
    private static final int TOKENS = 8192;

    @Param({"turbo:k8v3", "turbo:k4v2"})
    public String scheme;

    @Param({"128", "256"})
    public int headDim;

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
        encoded = arena.allocate((long) TOKENS * entry, 64);
        bf16Src = arena.allocate((long) TOKENS * 4 * headDim, 64);
        bf16Dst = arena.allocate((long) TOKENS * 4 * headDim, 64);
        Random rnd = new Random(1);
        k = new float[TOKENS * headDim];
        v = new float[TOKENS * headDim];
        for (int i = 0; i < k.length; i++) {
            k[i] = (float) rnd.nextGaussian();
            v[i] = (float) rnd.nextGaussian();
        }
        for (long i = 0; i < bf16Src.byteSize(); i++) {
            bf16Src.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
        }
        for (int t = 0; t < TOKENS; t++) {
            codec.encode(k, t * headDim, v, t * headDim, encoded, (long) t * entry);
        }
        rowK = new float[headDim];
        rowV = new float[headDim];
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    @Benchmark
    @OperationsPerInvocation(TOKENS)
    public void encode() {
        for (int t = 0; t < TOKENS; t++) {
            codec.encode(k, t * headDim, v, t * headDim, encoded, (long) t * entry);
        }
    }

    @Benchmark
    @OperationsPerInvocation(TOKENS)
    public void decode(Blackhole bh) {
        for (int t = 0; t < TOKENS; t++) {
            codec.decode(encoded, (long) t * entry, rowK, 0, rowV, 0);
            bh.consume(rowK[t & (headDim - 1)] + rowV[t & (headDim - 1)]);
        }
    }

    @Benchmark
    @OperationsPerInvocation(TOKENS)
    public void decodeRotated(Blackhole bh) {
        for (int t = 0; t < TOKENS; t++) {
            codec.decodeKey(encoded, (long) t * entry, rowK, 0);
            codec.decodeValueRotated(encoded, (long) t * entry, rowV, 0);
            bh.consume(rowK[t & (headDim - 1)] + rowV[t & (headDim - 1)]);
        }
    }

    @Benchmark
    @OperationsPerInvocation(TOKENS)
    public void copyBf16() {
        MemorySegment.copy(bf16Src, 0, bf16Dst, 0, bf16Src.byteSize());
    }

    /** Runs the benchmarks and prints tokens/s, bf16-equivalent GB/s and the ratio to the copy. */
    public static void main(String[] args) throws Exception {
        Options cli = new CommandLineOptions(args);
        Options opts = new OptionsBuilder().parent(cli).include(TurboCodecBenchmark.class.getName() + "\\.").build();
        Collection<RunResult> results = new Runner(opts).run();
        List<String[]> rows = new ArrayList<>();
        for (RunResult r : results) {
            String name = r.getParams().getBenchmark();
            String op = name.substring(name.lastIndexOf('.') + 1);
            rows.add(new String[] {r.getParams().getParam("scheme"), r.getParams().getParam("headDim"), op,
                Double.toString(r.getPrimaryResult().getScore())});
        }
        System.out.println();
        System.out.println("| scheme | head_dim | op | tokens/s | GB/s (bf16 K+V) | ratio vs copy |");
        System.out.println("|---|---|---|---|---|---|");
        for (String[] row : rows) {
            int d = Integer.parseInt(row[1]);
            double tps = Double.parseDouble(row[3]);
            double copy = rows.stream().filter(o -> o[0].equals(row[0]) && o[1].equals(row[1]) && o[2].equals("copyBf16"))
                    .mapToDouble(o -> Double.parseDouble(o[3])).findFirst().orElse(Double.NaN);
            System.out.println(String.format(Locale.ROOT, "| %s | %d | %s | %.3g | %.2f | %.2f |", row[0], d, row[2],
                    tps, tps * 4.0 * d / 1e9, tps / copy));
        }
    }
}
