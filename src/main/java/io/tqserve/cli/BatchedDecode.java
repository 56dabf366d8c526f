package io.tqserve.cli;

import io.tqserve.backend.ComputeBackend;
import io.tqserve.backend.DeviceSampler;
import io.tqserve.backend.DeviceStats;
import io.tqserve.backend.SamplingSpec;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.ForwardState;
import io.tqserve.model.ModelConfig;
import io.tqserve.model.Transformer;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The decode steps of 1, 2, 4, 8 and 16 sequences run together through the transformer as the batched lane runs them
 * (one forward pass per step; on a device decoder each step samples greedily on the device): aggregate tok/s as a
 * ratio to one sequence, and per step the device's evaluations, the device ops issued (on MLX the same count for
 * every batch size: the step's graph does not grow with the batch), the bytes copied from the device to Java and the
 * process's CPU time (every thread, native ones included: MLX's CPU device runs a step on its own threads and
 * BLAS's, which a thread count of the JVM does not see). On the CPU backend each row also splits the step's wall time
 * as {@code bench decode}'s phase account does: weight matmuls, other parallel work (attention, SwiGLU), and the
 * caller's thread alone (norms, RoPE, residual adds, the greedy argmax). CPU time per step is what a step costs whatever else runs
 * on the machine; wall-clock tok/s depends on it.
 */
final class BatchedDecode {
    private BatchedDecode() {
    }

    static void run(Transformer t, ComputeBackend backend, int[] prompt, int decodeTokens, PrintStream out) {
        ModelConfig c = t.config();
        out.println("  decode steps of 1/2/4/8/16 sequences together (greedy; per step: device evaluations, device ops, "
                + "bytes device->Java):");
        out.println("  seqs   tok/s   vs 1 seq   evals/step   ops/step   bytes->Java/step   CPU ms/step   tok per CPU-s"
                + "   vs 1 seq   step ms = matmuls + other parallel + lane alone");
        double one = 0;
        double oneCpu = 0;
        for (int n : new int[] {1, 2, 4, 8, 16}) {
            double[] best = null;
            for (int round = 0; round < 2; round++) { // round 0 warms up
                double[] r = once(t, backend, c, prompt, decodeTokens, n);
                best = best == null || r[0] > best[0] ? r : best;
            }
            double perCpu = n / (best[3] / 1e3);
            if (n == 1) {
                one = best[0];
                oneCpu = perCpu;
            }
            String phases = best[5] < 0 ? "" : String.format("   %7.2f = %7.2f + %5.2f + %5.2f", 1e3 * n / best[0],
                    best[5], best[6], 1e3 * n / best[0] - best[5] - best[6]);
            out.printf("  %4d  %7.1f   %6.2fx   %10.2f   %8.1f   %16.1f   %11.1f   %13.1f   %6.2fx%s%n", n, best[0],
                    best[0] / one, best[1], best[4], best[2], best[3], perCpu, perCpu / oneCpu, phases);
        }
    }

    /**
     * {tok/s, evaluations per step, bytes to Java per step, process CPU ms per step, device ops per step, matmul ms
     * per step, other parallel ms per step (the last two -1 without a {@link PhaseTimedBackend})} of {@code n}
     * sequences decoding together.
     */
    private static double[] once(Transformer t, ComputeBackend backend, ModelConfig c, int[] prompt, int decodeTokens,
            int n) {
        List<KvCache> caches = new ArrayList<>();
        List<DeviceSampler> samplers = new ArrayList<>();
        ForwardState state = new ForwardState(c);
        try {
            int[] last = new int[n];
            for (int i = 0; i < n; i++) {
                KvCache cache = KvCacheFactory.create(KvScheme.BF16, t.attentionShape(), backend,
                        prompt.length + decodeTokens + 1);
                caches.add(cache);
                float[] logits = t.forward(state, List.of(Transformer.Chunk.of(cache, prompt)));
                last[i] = argmax(logits, 0, c.vocabSize());
                if (t.runsOnDevice(cache)) {
                    samplers.add(t.deviceSampler(new SamplingSpec(0f, 0, 1f, 0f, 0L, 1f, 0f, 0f, Map.of(), -1,
                            prompt)).orElseThrow());
                }
            }
            DeviceStats before = backend.deviceStats();
            PhaseTimedBackend timed = backend instanceof PhaseTimedBackend p ? p : null;
            if (timed != null) {
                timed.reset();
            }
            long cpu0 = processCpuNanos();
            long t0 = System.nanoTime();
            for (int step = 0; step < decodeTokens; step++) {
                List<Transformer.Chunk> chunks = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    chunks.add(samplers.isEmpty() ? Transformer.Chunk.of(caches.get(i), new int[] {last[i]})
                            : Transformer.Chunk.sampled(caches.get(i), last[i], samplers.get(i)));
                }
                float[] logits = t.forward(state, chunks);
                for (int i = 0; i < n; i++) {
                    last[i] = state.sample(i) != null ? state.sample(i).token()
                            : argmax(logits, i * c.vocabSize(), c.vocabSize());
                }
            }
            long t1 = System.nanoTime();
            long cpu = processCpuNanos() - cpu0;
            DeviceStats d = backend.deviceStats().since(before);
            return new double[] {(double) n * decodeTokens / ((t1 - t0) / 1e9),
                (double) d.evaluations() / decodeTokens, (double) d.bytesToJava() / decodeTokens,
                cpu / 1e6 / decodeTokens, (double) d.ops() / decodeTokens,
                timed == null ? -1 : timed.matmulNanos / 1e6 / decodeTokens,
                timed == null ? -1 : timed.parallelNanos / 1e6 / decodeTokens};
        } finally {
            samplers.forEach(DeviceSampler::close);
            caches.forEach(KvCache::close);
        }
    }

    /** CPU time of the whole process so far (all threads, native ones included), or 0 if the JVM cannot tell. */
    static long processCpuNanos() {
        return java.lang.management.ManagementFactory.getOperatingSystemMXBean()
                instanceof com.sun.management.OperatingSystemMXBean os ? Math.max(0, os.getProcessCpuTime()) : 0;
    }

    static int argmax(float[] x, int off, int n) {
        int best = 0;
        for (int i = 1; i < n; i++) {
            if (x[off + i] > x[off + best]) {
                best = i;
            }
        }
        return best;
    }
}
