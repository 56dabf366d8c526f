package io.tqserve.cli;

import io.tqserve.backend.ComputeBackend;
import io.tqserve.kv.AttentionShape;
import io.tqserve.kv.DeviceKvCache;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.ForwardState;
import io.tqserve.model.Transformer;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The context sweep of {@code bench decode} on a backend with device-resident KV caches (MLX): bf16 against a turbo
 * scheme, both on the device, in one run. Per arm and context: decode tok/s of the whole step as the server runs it
 * (one device graph per step: projections, store, attention, LM head), and the attention time per step, measured
 * by running the same step through the Java forward, whose per-layer {@code attend} calls the device cache (upload
 * q/k/v, store and attention as one small graph, evaluated, output copied back) — so the attention column includes
 * one device round trip per layer, which the one-graph step does not pay. Caches are filled by importing encoded
 * random K/V, as in {@link ContextSweep}; arms take turns step by step; medians over the steps.
 */
final class DeviceContextSweep {
    private static final int WARMUP_STEPS = 4;

    private DeviceContextSweep() {
    }

    static void run(Transformer t, ComputeBackend backend, KvScheme.Turbo turbo, List<Integer> contexts, int steps,
            int repeat, PrintStream out, PrintStream progress) {
        List<KvScheme> arms = List.of(KvScheme.BF16, turbo);
        AttentionShape shape = t.attentionShape();
        double[][][] results = new double[contexts.size()][arms.size()][];
        try (Arena arena = Arena.ofConfined()) {
            List<MemorySegment> pools = new ArrayList<>();
            for (KvScheme s : arms) {
                pools.add(ContextSweep.pool(s, shape.headDim(), arena));
            }
            for (int ci = 0; ci < contexts.size(); ci++) {
                int context = contexts.get(ci);
                progress.printf("device sweep: context %d ...%n", context);
                List<TimedKvCache> caches = new ArrayList<>();
                int n = steps * repeat;
                double[][] stepMs = new double[arms.size()][n];
                double[][] attnMs = new double[arms.size()][n];
                try {
                    for (int i = 0; i < arms.size(); i++) {
                        ContextSweep.Arm arm = new ContextSweep.Arm(arms.get(i).id(), arms.get(i), null);
                        TimedKvCache c = ContextSweep.filled(t, backend, arm, pools.get(i), context,
                                2 * (n + WARMUP_STEPS), null);
                        caches.add(c);
                        if (!(c.inner() instanceof DeviceKvCache)) {
                            throw new IllegalStateException(backend.name() + " has no device cache for " + arm.label());
                        }
                    }
                    ForwardState state = new ForwardState(t.config());
                    for (int s = -WARMUP_STEPS; s < n; s++) {
                        for (int i = 0; i < arms.size(); i++) {
                            TimedKvCache c = caches.get(i);
                            long t0 = System.nanoTime();
                            t.forward(state, List.of(Transformer.Chunk.of(c.inner(), token(t, c))));
                            long t1 = System.nanoTime();
                            double attn = ContextSweep.step(t, state, c, null)[2]; // Java forward, per-layer attend
                            if (s >= 0) {
                                stepMs[i][s] = (t1 - t0) / 1e6;
                                attnMs[i][s] = attn;
                            }
                        }
                    }
                } finally {
                    caches.forEach(TimedKvCache::close);
                }
                for (int i = 0; i < arms.size(); i++) {
                    results[ci][i] = new double[] {ContextSweep.median(stepMs[i]), ContextSweep.median(attnMs[i])};
                }
            }
        }
        out.printf("%nDecode vs context on the device (%s): median over %d steps per arm (arms take turns step by step,"
                + " after %d warm-up steps). tok/s: the one-graph step. attention ms/step: store + attention of all"
                + " layers through the per-layer device path (one round trip per layer). Ratios vs bf16, >1 = better.%n%n",
                backend.name(), steps * repeat, WARMUP_STEPS);
        out.printf("| context | bf16 tok/s | %s tok/s | bf16 attention ms/step | %s attention ms/step |%n", turbo.id(),
                turbo.id());
        out.println("|---|---|---|---|---|");
        for (int ci = 0; ci < contexts.size(); ci++) {
            double[] b = results[ci][0];
            double[] q = results[ci][1];
            out.printf("| %d | %.1f | %.1f (%.2fx) | %.2f | %.2f (%.2fx) |%n", contexts.get(ci), 1000 / b[0], 1000 / q[0],
                    b[0] / q[0], b[1], q[1], b[1] / q[1]);
        }
        out.println();
    }

    private static int[] token(Transformer t, KvCache c) {
        return new int[] {3 + (c.length() * 104729) % (t.config().vocabSize() - 3)};
    }
}
