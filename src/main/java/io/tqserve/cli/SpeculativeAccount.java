package io.tqserve.cli;

import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.ForwardState;
import io.tqserve.model.Transformer;
import java.util.List;

/**
 * {@code bench speculative --account}: what a verification pass of k rows costs against a one-row decode step, on
 * the forward pass alone (no lane, no sampling): the copy prompt prefilled and decoded a little, then passes of
 * 1..k rows (logits for every row, as a verifying pass asks) each followed by the cache's truncation back to where it
 * was, the row counts interleaved in every round, after unmeasured rounds until the JIT is quiet
 * ({@link JitWarmup}: the fused turbo kernels run far below their compiled speed until C2 has them). Per row count: CPU time of the calling thread and the kernel
 * threads per pass, its ratio to one row, and its parts: the weight matmuls (LM head included) and attention (storing
 * the rows' K/V and attending) as CPU time, the rest (norms, RoPE, embedding, residual adds) by difference, and the
 * truncation. CPU time, not wall time, so the ratios hold on a shared machine.
 */
final class SpeculativeAccount {
    private static final int PASSES = 8;

    private SpeculativeAccount() {
    }

    static void run(Transformer t, PhaseTimedBackend timed, List<KvScheme> schemes, int[] prompt, int[] rowCounts,
            int rounds) {
        System.out.println("| KV | rows | pass CPU ms | x one row | matmuls CPU ms | attention CPU ms | rest CPU ms"
                + " | truncate us | wall ms |");
        System.out.println("|---|---|---|---|---|---|---|---|---|");
        for (KvScheme scheme : schemes) {
            account(t, timed, scheme, prompt, rowCounts, rounds);
        }
    }

    private static void account(Transformer t, PhaseTimedBackend timed, KvScheme scheme, int[] prompt,
            int[] rowCounts, int rounds) {
        int decoded = 64;
        int most = 0;
        for (int k : rowCounts) {
            most = Math.max(most, k);
        }
        ForwardState state = new ForwardState(t.config());
        try (TimedKvCache cache = new TimedKvCache(KvCacheFactory.create(scheme, t.attentionShape(), t.backend(),
                prompt.length + decoded + most + 1), CpuClock.forKernelThreads())) {
            t.forward(state, List.of(new Transformer.Chunk(cache, prompt, 0, prompt.length, false)));
            for (int i = 0; i < decoded; i++) {
                t.forward(state, List.of(Transformer.Chunk.of(cache, new int[] {prompt[i % prompt.length]})));
            }
            int base = cache.length();
            int[] input = new int[most];
            for (int i = 0; i < most; i++) {
                input[i] = prompt[(base + i) % prompt.length];
            }
            long[][] sums = new long[rowCounts.length][5];
            JitWarmup warmup = new JitWarmup();
            while (!warmup.done()) { // unmeasured rounds until the JIT is quiet
                round(t, timed, state, cache, input, base, rowCounts, null, null);
            }
            CpuClock cpu = CpuClock.forKernelThreads();
            timed.cpu = cpu;
            for (int r = 0; r < rounds; r++) {
                round(t, timed, state, cache, input, base, rowCounts, cpu, sums);
            }
            timed.cpu = null;
            double n = (double) rounds * PASSES;
            double one = sums[0][0] / n;
            for (int ki = 0; ki < rowCounts.length; ki++) {
                long[] s = sums[ki];
                System.out.printf("| %s | %d | %.3f | %.2f | %.3f | %.3f | %.3f | %.1f | %.3f |%n", scheme.id(),
                        rowCounts[ki], s[0] / n / 1e6, s[0] / n / one, s[1] / n / 1e6, s[2] / n / 1e6,
                        (s[0] - s[1] - s[2]) / n / 1e6, s[3] / n / 1e3, s[4] / n / 1e6);
            }
            System.out.flush();
        }
    }

    /** One round: PASSES passes of every row count, each truncated back to base; added to sums unless null. */
    private static void round(Transformer t, PhaseTimedBackend timed, ForwardState state, TimedKvCache cache,
            int[] input, int base, int[] rowCounts, CpuClock cpu, long[][] sums) {
        for (int ki = 0; ki < rowCounts.length; ki++) {
            int k = rowCounts[ki];
            for (int p = 0; p < PASSES; p++) {
                timed.reset();
                cache.resetTimer();
                long c0 = cpu == null ? 0 : cpu.nanos();
                long w0 = System.nanoTime();
                t.forward(state, List.of(new Transformer.Chunk(cache, input, 0, k, k > 1)));
                long c1 = cpu == null ? 0 : cpu.nanos();
                long w1 = System.nanoTime();
                cache.truncate(base);
                long w2 = System.nanoTime();
                if (sums != null) {
                    sums[ki][0] += c1 - c0;
                    sums[ki][1] += timed.matmulCpuNanos;
                    sums[ki][2] += cache.attendCpuNanos();
                    sums[ki][3] += w2 - w1;
                    sums[ki][4] += w1 - w0;
                }
            }
        }
    }
}
