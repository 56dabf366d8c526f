package io.tqserve.cli;

import io.tqserve.backend.ComputeBackend;
import io.tqserve.kv.AttentionShape;
import io.tqserve.kv.Bf16Codec;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvCodec;
import io.tqserve.kv.KvScheme;
import io.tqserve.kv.UniformAffineCodec;
import io.tqserve.kv.turbo.AttentionPath;
import io.tqserve.kv.turbo.TurboCodec;
import io.tqserve.kv.turbo.TurboQuantKvCache;
import io.tqserve.model.ForwardState;
import io.tqserve.model.Transformer;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * The context-length sweep of {@code bench decode}: decode tok/s and attention time per step (store + attend, all
 * layers), as wall time and as CPU time, at each context for bf16 and the three attention paths of a turbo scheme,
 * measured in one run and reported as ratios to bf16. The context is filled by importing encoded random K/V (a pool
 * of entries repeated), not by a prefill: a prefill of thousands of tokens takes minutes on a small machine and the
 * decode step's cost does not depend on the cached values.
 */
final class ContextSweep {
    /** One measured configuration. */
    record Arm(String label, KvScheme scheme, AttentionPath path) {
        KvCache create(AttentionShape shape, ComputeBackend backend, int maxTokens) {
            return path == null ? KvCacheFactory.create(scheme, shape, backend, maxTokens)
                    : new TurboQuantKvCache((KvScheme.Turbo) scheme, shape, backend, maxTokens, 0, path);
        }
    }

    /** Medians over the measured steps of one arm at one context: wall and CPU time per step, whole and attention. */
    record Point(double stepMs, double stepCpuMs, double attnMs, double attnCpuMs) {
        double tokPerS() {
            return 1000 / stepMs;
        }
    }

    private static final int POOL = 1024;
    private static final int WARMUP_STEPS = 4;
    private static final int WARMUP_SECONDS = 8;

    private ContextSweep() {
    }

    static List<Arm> arms(KvScheme.Turbo turbo) {
        return List.of(new Arm("bf16", KvScheme.BF16, null),
                new Arm(turbo.id() + " dequant", turbo, AttentionPath.DEQUANT),
                new Arm(turbo.id() + " deferred", turbo, AttentionPath.DEFERRED),
                new Arm(turbo.id() + " fused", turbo, AttentionPath.FUSED));
    }

    /** 256, 512, … while the context plus the decode steps fit, then the largest context that fits. */
    static List<Integer> defaultContexts(int maxPositions, int steps, int repeat) {
        int room = maxPositions - WARMUP_STEPS - steps * repeat;
        List<Integer> out = new ArrayList<>();
        for (int c = 256; c <= room; c *= 2) {
            out.add(c);
        }
        if (out.isEmpty() || out.getLast() < room) {
            out.add(room);
        }
        return out;
    }

    /**
     * For each context: one cache per arm filled to the context; {@code repeat} rounds of {@code steps} decode steps,
     * the arms taking turns step by step (so they share the machine's conditions, and each arm's KV is as cold as in
     * a real step, where the weights stream through the cache in between); per arm the median over its steps.
     */
    static void run(Transformer t, ComputeBackend backend, List<Arm> arms, List<Integer> contexts, int steps,
            int repeat, PrintStream out, PrintStream progress) {
        AttentionShape shape = t.attentionShape();
        List<MemorySegment> pools = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            for (Arm arm : arms) {
                pools.add(pool(arm.scheme(), shape.headDim(), arena));
            }
            progress.printf("sweep: JIT warm-up, %d s per arm at context 256 ...%n", WARMUP_SECONDS);
            CpuClock cpu = null;
            for (int i = 0; i < arms.size(); i++) {
                // C2 compiles the big kernels in the background; on a busy machine that takes seconds, not steps
                long until = System.nanoTime() + WARMUP_SECONDS * 1_000_000_000L;
                int done = 0;
                while (done < 3 * steps || System.nanoTime() < until) {
                    try (TimedKvCache c = filled(t, backend, arms.get(i), pools.get(i), 256, steps, null)) {
                        decode(t, c, steps, null);
                    }
                    done += steps;
                }
                cpu = CpuClock.forKernelThreads(); // the pool's threads exist once it has run work
            }
            Point[][] points = new Point[contexts.size()][arms.size()];
            for (int ci = 0; ci < contexts.size(); ci++) {
                int context = contexts.get(ci);
                progress.printf("sweep: context %d: filling %d caches ...%n", context, arms.size());
                List<TimedKvCache> caches = new ArrayList<>();
                double[][][] samples = new double[arms.size()][4][steps * repeat];
                try {
                    for (int i = 0; i < arms.size(); i++) {
                        caches.add(filled(t, backend, arms.get(i), pools.get(i), context, repeat * steps, cpu));
                        decode(t, caches.get(i), WARMUP_STEPS, null);
                    }
                    ForwardState[] states = new ForwardState[arms.size()];
                    for (int i = 0; i < arms.size(); i++) {
                        states[i] = new ForwardState(t.config());
                    }
                    for (int r = 0; r < repeat; r++) {
                        progress.printf("sweep: context %d, round %d/%d%n", context, r + 1, repeat);
                        for (int s = 0; s < steps; s++) {
                            for (int i = 0; i < arms.size(); i++) { // round-robin: every arm sees the same moments
                                double[] m = step(t, states[i], caches.get(i), cpu);
                                for (int k = 0; k < 4; k++) {
                                    samples[i][k][r * steps + s] = m[k];
                                }
                            }
                        }
                    }
                } finally {
                    caches.forEach(TimedKvCache::close);
                }
                for (int i = 0; i < arms.size(); i++) {
                    points[ci][i] = new Point(median(samples[i][0]), median(samples[i][1]), median(samples[i][2]),
                            median(samples[i][3]));
                }
            }
            print(arms, contexts, points, steps, repeat, cpu.threads(), out);
        }
    }

    static double median(double[] x) {
        double[] s = x.clone();
        java.util.Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    private interface Cell {
        double value(Point p);
    }

    private static void table(PrintStream out, String what, List<Arm> arms, List<Integer> contexts, Point[][] points,
            Cell cell, boolean higherIsBetter) {
        StringBuilder head = new StringBuilder("| context |");
        StringBuilder rule = new StringBuilder("|---|");
        for (Arm a : arms) {
            head.append(' ').append(a.label()).append(' ').append(what).append(" |");
            rule.append("---|");
        }
        out.println(head);
        out.println(rule);
        for (int c = 0; c < contexts.size(); c++) {
            StringBuilder row = new StringBuilder("| " + contexts.get(c) + " |");
            double base = cell.value(points[c][0]);
            for (int i = 0; i < arms.size(); i++) {
                double v = cell.value(points[c][i]);
                row.append(i == 0 ? String.format(" %.2f |", v)
                        : String.format(" %.2f (%.2fx) |", v, higherIsBetter ? v / base : base / v));
            }
            out.println(row);
        }
        out.println();
    }

    private static void print(List<Arm> arms, List<Integer> contexts, Point[][] points, int steps, int repeat,
            int threads, PrintStream out) {
        out.printf("%nDecode vs context: median over %d rounds x %d decode steps per arm (arms take turns step by"
                + " step, after %d warm-up steps). Ratios are vs bf16, >1 = better. Attention = store + attend, all layers."
                + " CPU = CPU time of the %d compute threads (caller + kernel pool), immune to waiting for a core.%n%n",
                repeat, steps, WARMUP_STEPS, threads);
        table(out, "tok/s", arms, contexts, points, Point::tokPerS, true);
        table(out, "attention ms/step", arms, contexts, points, Point::attnMs, false);
        table(out, "CPU ms/token", arms, contexts, points, Point::stepCpuMs, false);
        table(out, "attention CPU ms/step", arms, contexts, points, Point::attnCpuMs, false);
    }

    /** A fresh cache of the arm with room for {@code extra} more tokens, filled to {@code context} tokens. */
    static TimedKvCache filled(Transformer t, ComputeBackend backend, Arm arm, MemorySegment pool, int context,
            int extra, CpuClock cpu) {
        AttentionShape shape = t.attentionShape();
        TimedKvCache cache = new TimedKvCache(arm.create(shape, backend, context + WARMUP_STEPS + extra),
                cpu == null ? CpuClock.forKernelThreads() : cpu);
        try (Arena arena = Arena.ofConfined()) {
            int entry = shape.layout(arm.scheme()).bytesPerTokenPerHead();
            MemorySegment layer = arena.allocate((long) context * shape.numKvHeads() * entry);
            for (int l = 0; l < shape.layers(); l++) {
                for (int tok = 0; tok < context; tok++) {
                    for (int g = 0; g < shape.numKvHeads(); g++) {
                        int pick = (tok * 31 + g * 7 + l * 13) % POOL;
                        MemorySegment.copy(pool, (long) pick * entry, layer,
                                ((long) tok * shape.numKvHeads() + g) * entry, entry);
                    }
                }
                cache.importLayer(l, context, layer);
            }
        }
        cache.advance(context);
        return cache;
    }

    /** Runs decode steps, unmeasured (warm-up). */
    static void decode(Transformer t, TimedKvCache cache, int steps, CpuClock cpu) {
        ForwardState state = new ForwardState(t.config());
        for (int i = 0; i < steps; i++) {
            step(t, state, cache, cpu);
        }
    }

    /** One decode step: [wall ms, CPU ms, attention wall ms, attention CPU ms] (CPU 0 without a clock). */
    static double[] step(Transformer t, ForwardState state, TimedKvCache cache, CpuClock cpu) {
        int[] one = {3 + (cache.length() * 104729) % (t.config().vocabSize() - 3)};
        cache.resetTimer();
        long c0 = cpu == null ? 0 : cpu.nanos();
        long t0 = System.nanoTime();
        t.forward(state, List.of(Transformer.Chunk.of(cache, one)));
        long t1 = System.nanoTime();
        return new double[] {(t1 - t0) / 1e6, cpu == null ? 0 : (cpu.nanos() - c0) / 1e6, cache.attendNanos() / 1e6,
                cache.attendCpuNanos() / 1e6};
    }

    /**
     * POOL entries of the scheme's codec from random K/V shaped like a model's: keys with a few outlier channels and
     * an offset, values Gaussian.
     */
    static MemorySegment pool(KvScheme scheme, int headDim, Arena arena) {
        KvCodec codec = switch (scheme) {
            case KvScheme.Bf16 b -> new Bf16Codec(headDim);
            case KvScheme.Turbo tq -> TurboCodec.of(tq, headDim);
            case KvScheme.Uniform u -> new UniformAffineCodec(u, headDim);
        };
        MemorySegment seg = arena.allocate((long) POOL * codec.entryBytes());
        Random rnd = new Random(1234);
        float[] k = new float[headDim];
        float[] v = new float[headDim];
        for (int p = 0; p < POOL; p++) {
            for (int i = 0; i < headDim; i++) {
                k[i] = (float) (rnd.nextGaussian() * (i % 16 == 3 ? 8 : 1.5) + 0.3);
                v[i] = (float) rnd.nextGaussian();
            }
            codec.encode(k, 0, v, 0, seg, (long) p * codec.entryBytes());
        }
        return seg;
    }
}
