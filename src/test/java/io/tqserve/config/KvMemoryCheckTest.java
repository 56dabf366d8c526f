package io.tqserve.config;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.engine.Lane;
import io.tqserve.kv.KvLayout;
import io.tqserve.kv.KvScheme;
import io.tqserve.routing.LanePlan;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The startup check that the lanes' KV budgets fit beside the heap in the machine's memory. */
class KvMemoryCheckTest {
    static final KvLayout BF16 = KvLayout.of(KvScheme.BF16, 6, 2, 128);         // 6144 bytes per token
    static final KvLayout TURBO = KvLayout.of(KvScheme.TURBO_DEFAULT, 6, 2, 128); // 2400 bytes per token
    static final List<LanePlan> DEFAULT_LANES = List.of(
            new LanePlan(Lane.Kind.TURBO, KvScheme.TURBO_DEFAULT, TURBO, 256L << 20),
            new LanePlan(Lane.Kind.BATCHED, KvScheme.BF16, BF16, 512L << 20));

    @Test
    void theWorstCaseIsTheBudgetsPlusOneAllocationChunkPerRunningSequence() {
        // 768 MB of budgets + 8 batched chunks of 256 tokens × 6144 bytes + 1 turbo chunk of 256 × 2400 bytes.
        assertThat(KvMemoryCheck.worstCaseBytes(DEFAULT_LANES, 8))
                .isEqualTo((768L << 20) + 8L * 256 * 6144 + 256L * 2400);
    }

    @Test
    void budgetsThatFitBesideTheHeapPassAndOthersAreNamedInAWarning() {
        long need = KvMemoryCheck.worstCaseBytes(DEFAULT_LANES, 8);
        assertThat(KvMemoryCheck.check(DEFAULT_LANES, 8, need + (1L << 30), 1L << 30)).isEmpty();
        assertThat(KvMemoryCheck.check(DEFAULT_LANES, 8, need + (1L << 30) - 1, 1L << 30)).hasValueSatisfying(w ->
                assertThat(w).contains("tqserve.lanes.batched.kv-budget").contains("tqserve.lanes.turbo.kv-budget")
                        .contains("780 MB"));
    }

    @Test
    void theWeightsCountBesideTheKvCaches() {
        long need = KvMemoryCheck.worstCaseBytes(DEFAULT_LANES, 8);
        long weights = 300L << 20; // e.g. a 0.5B model at 4 bits
        assertThat(KvMemoryCheck.check(DEFAULT_LANES, 8, weights, need + (1L << 30) + weights, 1L << 30)).isEmpty();
        assertThat(KvMemoryCheck.check(DEFAULT_LANES, 8, weights, need + (1L << 30) + weights - 1, 1L << 30))
                .hasValueSatisfying(w -> assertThat(w).contains("300 MB of weights").contains("serve quantized weights"));
    }
}
