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
 * layers) at each context for bf16 and the three attention paths of a turbo scheme, measured in one run and
 * reported as ratios to bf16. The context is filled by importing encoded random K/V (a pool of entries repeated),
 * not by a prefill: a prefill of thousands of tokens takes minutes on a small machine and the decode step's cost
 * does not depend on the cached values.
 */
final class ContextSweep {
    /** One measured configuration. */
    record Arm(String label, KvScheme scheme, AttentionPath path) {
        KvCache create(AttentionShape shape, ComputeBackend backend, int maxTokens) {
            return path == null ? KvCacheFactory.create(scheme, shape, backend, maxTokens)
                    : new TurboQuantKvCache((KvScheme.Turbo) scheme, shape, backend, maxTokens, 0, path);
        }
    }

    /** tok/s and attention ms per step of one arm at one context. */
    record Point(double tokPerS, double attnMs) {
    }

    private static final int POOL = 1024;
    private static final int WARMUP_STEPS = 4;

    private ContextSweep() {
    }

    static List<Arm> arms(KvScheme.Turbo turbo) {
        return List.of(new Arm("bf16", KvScheme.BF16, null),
                new Arm(turbo.id() + " dequant", turbo, AttentionPath.DEQUANT),
                new Arm(turbo.id() + " deferred", turbo, AttentionPath.DEFERRED),
                new Arm(turbo.id() + " fused", turbo, AttentionPath.FUSED));
    }

    /** 256, 512, … while the context plus the decode steps fit, then the largest context that fits. */
    static List<Integer> defaultContexts(int maxPositions, int steps) {
        int room = maxPositions - steps - WARMUP_STEPS;
        List<Integer> out = new ArrayList<>();
        for (int c = 256; c <= room; c *= 2) {
            out.add(c);
        }
        if (out.isEmpty() || out.getLast() < room) {
            out.add(room);
        }
        return out;
    }

    static void run(Transformer t, ComputeBackend backend, List<Arm> arms, List<Integer> contexts, int steps,
            int repeat, PrintStream out, PrintStream progress) {
        AttentionShape shape = t.attentionShape();
        List<MemorySegment> pools = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            for (Arm arm : arms) {
                pools.add(pool(arm.scheme(), shape.headDim(), arena));
            }
            progress.println("sweep: JIT warm-up at context 256 ...");
            for (int i = 0; i < arms.size(); i++) {
                measure(t, backend, arms.get(i), pools.get(i), Math.min(256, contexts.getFirst()), 3 * steps);
            }
            Point[][] points = new Point[contexts.size()][arms.size()];
            for (int c = 0; c < contexts.size(); c++) {
                for (int r = 0; r < repeat; r++) {
                    for (int i = 0; i < arms.size(); i++) { // arms interleaved, best of the repeats
                        progress.printf("sweep: context %d, %s, round %d/%d%n", contexts.get(c), arms.get(i).label(),
                                r + 1, repeat);
                        Point p = measure(t, backend, arms.get(i), pools.get(i), contexts.get(c), steps);
                        Point best = points[c][i];
                        points[c][i] = best == null ? p : new Point(Math.max(best.tokPerS(), p.tokPerS()),
                                Math.min(best.attnMs(), p.attnMs()));
                    }
                }
            }
            print(arms, contexts, points, steps, repeat, out);
        }
    }

    private static void print(List<Arm> arms, List<Integer> contexts, Point[][] points, int steps, int repeat,
            PrintStream out) {
        out.printf("%nDecode vs context (%d decode steps per point after %d warm-up steps, best of %d; attention ="
                + " store + attend of all layers per step)%n%n", steps, WARMUP_STEPS, repeat);
        StringBuilder head = new StringBuilder("| context |");
        StringBuilder rule = new StringBuilder("|---|");
        for (Arm a : arms) {
            head.append(' ').append(a.label()).append(" tok/s |");
            rule.append("---|");
        }
        out.println(head);
        out.println(rule);
        for (int c = 0; c < contexts.size(); c++) {
            StringBuilder row = new StringBuilder("| " + contexts.get(c) + " |");
            double base = points[c][0].tokPerS();
            for (int i = 0; i < arms.size(); i++) {
                double v = points[c][i].tokPerS();
                row.append(i == 0 ? String.format(" %.2f |", v) : String.format(" %.2f (%.2fx) |", v, v / base));
            }
            out.println(row);
        }
        out.println();
        head = new StringBuilder("| context |");
        for (Arm a : arms) {
            head.append(' ').append(a.label()).append(" attention ms/step |");
        }
        out.println(head);
        out.println(rule);
        for (int c = 0; c < contexts.size(); c++) {
            StringBuilder row = new StringBuilder("| " + contexts.get(c) + " |");
            double base = points[c][0].attnMs();
            for (int i = 0; i < arms.size(); i++) {
                double v = points[c][i].attnMs();
                row.append(i == 0 ? String.format(" %.2f |", v)
                        : String.format(" %.2f (%.2fx faster) |", v, base / v));
            }
            out.println(row);
        }
    }

    /** Fills a fresh cache to {@code context} tokens, runs warm-up and measured decode steps. */
    static Point measure(Transformer t, ComputeBackend backend, Arm arm, MemorySegment pool, int context, int steps) {
        AttentionShape shape = t.attentionShape();
        try (TimedKvCache cache = new TimedKvCache(arm.create(shape, backend, context + WARMUP_STEPS + steps));
                Arena arena = Arena.ofConfined()) {
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
            cache.advance(context);
            ForwardState state = new ForwardState(t.config());
            int[] one = {1};
            for (int i = 0; i < WARMUP_STEPS; i++) {
                one[0] = 3 + (i * 7919) % (t.config().vocabSize() - 3);
                t.forward(state, List.of(Transformer.Chunk.of(cache, one)));
            }
            cache.resetTimer();
            long t0 = System.nanoTime();
            for (int i = 0; i < steps; i++) {
                one[0] = 3 + (i * 104729) % (t.config().vocabSize() - 3);
                t.forward(state, List.of(Transformer.Chunk.of(cache, one)));
            }
            long t1 = System.nanoTime();
            return new Point(steps / ((t1 - t0) / 1e9), cache.attendNanos() / 1e6 / steps);
        }
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
