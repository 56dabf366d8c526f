package io.tqserve.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.ForwardState;
import io.tqserve.model.Model;
import io.tqserve.model.Transformer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The startup warm-up: what it runs, that zero turns it off, and that it leaves nothing behind that changes output. */
class WarmupTest {
    static CpuBackend backend;
    static Model model;

    @BeforeAll
    static void load() throws Exception {
        backend = CpuBackend.create(2);
        model = Model.load(Path.of("models/tiny-llama-h128"), backend);
    }

    @AfterAll
    static void close() {
        model.close();
        backend.close();
    }

    /** Greedy tokens after a fixed prompt, on a fresh cache and forward state. */
    static int[] greedy(KvScheme scheme, int n) {
        Transformer t = model.transformer();
        ForwardState state = new ForwardState(model.config());
        int[] prompt = Warmup.tokens(20, model.config().vocabSize(), 99);
        int[] out = new int[n];
        try (KvCache cache = KvCacheFactory.create(scheme, t.attentionShape(), t.backend(), prompt.length + n)) {
            float[] logits = t.forward(state, List.of(Transformer.Chunk.of(cache, prompt)));
            for (int i = 0; i < n; i++) {
                int best = 0;
                for (int v = 1; v < logits.length; v++) {
                    if (logits[v] > logits[best]) {
                        best = v;
                    }
                }
                out[i] = best;
                logits = t.forward(state, List.of(Transformer.Chunk.of(cache, new int[] {best})));
            }
        }
        return out;
    }

    @Test
    void zeroBudgetRunsNothing() {
        Warmup.Report r = Warmup.run(model, List.of(KvScheme.BF16), Duration.ZERO);
        assertThat(r.rounds()).isZero();
        assertThat(r.forwards()).isZero();
    }

    @Test
    void everyRoundRunsEveryPathForEverySchemeAndOutputIsUnchanged() {
        List<KvScheme> schemes = List.of(KvScheme.BF16, KvScheme.TURBO_DEFAULT);
        int[] bf16Before = greedy(KvScheme.BF16, 12);
        int[] turboBefore = greedy(KvScheme.TURBO_DEFAULT, 12);
        Warmup.Report r = Warmup.run(model, schemes, Duration.ofSeconds(60));
        // per scheme and round: prefill, 6 decode steps, 3 verification passes, continued prefill, second prefill,
        // 6 two-sequence steps
        assertThat(r.rounds()).isGreaterThanOrEqualTo(Warmup.MIN_ROUNDS);
        assertThat(r.forwards()).isEqualTo(r.rounds() * schemes.size()
                * (1 + Warmup.DECODE + Warmup.DRAFTS.length + 1 + 1 + Warmup.DECODE));
        assertThat(Arrays.toString(greedy(KvScheme.BF16, 12))).isEqualTo(Arrays.toString(bf16Before));
        assertThat(Arrays.toString(greedy(KvScheme.TURBO_DEFAULT, 12))).isEqualTo(Arrays.toString(turboBefore));
    }

    @Test
    void noRoundStartsAfterKeepGoingTurnsFalse() {
        Warmup.Report r = Warmup.run(model, List.of(KvScheme.BF16), Duration.ofSeconds(60), () -> false);
        assertThat(r.rounds()).isEqualTo(1);
    }

    @Test
    void aSpentBudgetStopsAfterTheFirstRound() {
        Warmup.Report r = Warmup.run(model, List.of(KvScheme.BF16), Duration.ofNanos(1));
        assertThat(r.rounds()).isEqualTo(1);
        assertThat(r.forwards()).isEqualTo(1 + Warmup.DECODE + Warmup.DRAFTS.length + 1 + 1 + Warmup.DECODE);
    }
}
