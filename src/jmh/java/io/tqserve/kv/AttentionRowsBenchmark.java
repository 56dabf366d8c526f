package io.tqserve.kv;

import io.tqserve.backend.cpu.CpuBackend;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One layer's attention for a pass of {@code rows} new rows over a cache of {@code context} tokens (the rows' K/V
 * stored, then every row attended over the prefix and the rows before it), on one kernel thread: what a prompt-lookup
 * verification pass of rows − 1 draft tokens costs in attention against a one-row decode step. The shape is the
 * embedded model's (4 query heads, 2 KV heads, headDim 128). The pass is repeated at the same position (the cache is
 * never advanced), so the context stays fixed.
 *
 * <pre>
 * java --add-modules jdk.incubator.vector -cp target/benchmarks.jar org.openjdk.jmh.Main AttentionRowsBenchmark \
 *     -f 1 -wi 3 -i 5 -w 1s -r 1s -p scheme=turbo:k8v3,bf16 -p rows=1,2,4,8
 * </pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
    "-Xmx2g"})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class AttentionRowsBenchmark {
    @Param({"turbo:k8v3", "bf16"})
    public String scheme;

    @Param({"1", "2", "4", "8"})
    public int rows;

    @Param({"400"})
    public int context;

    private CpuBackend backend;
    private KvCache cache;
    private float[] q;
    private float[] k;
    private float[] v;
    private float[] out;

    @Setup(Level.Trial)
    public void setup() {
        AttentionShape shape = new AttentionShape(1, 4, 2, 128);
        backend = CpuBackend.create(1);
        cache = KvCacheFactory.create(KvScheme.parse(scheme), shape, backend, context + rows);
        SplittableRandom rnd = new SplittableRandom(7);
        int n = Math.max(context, rows);
        float[] pq = random(rnd, n * shape.qDim());
        float[] pk = random(rnd, n * shape.kvDim());
        float[] pv = random(rnd, n * shape.kvDim());
        cache.attend(0, 0, context, pq, pk, pv, new float[context * shape.qDim()]);
        cache.advance(context);
        q = random(rnd, rows * shape.qDim());
        k = random(rnd, rows * shape.kvDim());
        v = random(rnd, rows * shape.kvDim());
        out = new float[rows * shape.qDim()];
    }

    private static float[] random(SplittableRandom rnd, int n) {
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = (float) rnd.nextGaussian();
        }
        return x;
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        cache.close();
        backend.close();
    }

    @Benchmark
    public float[] pass() {
        cache.attend(0, 0, rows, q, k, v, out);
        return out;
    }
}
