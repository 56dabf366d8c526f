package io.tqserve.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** thinking_token_budget's state: the end marker's tokens are forced once the budget is spent, and only then. */
class ReasoningBudgetTest {
    @Test
    void theMarkerIsForcedTokenByTokenOnceTheBudgetIsSpent() {
        ReasoningBudget.State s = new ReasoningBudget(3, new int[] {7, 8}).start();
        for (int t : new int[] {1, 2, 3}) {
            assertThat(s.forced()).isEqualTo(-1);
            s.accept(t);
        }
        assertThat(s.forced()).isEqualTo(7);
        s.accept(7);
        assertThat(s.forced()).isEqualTo(8);
        s.accept(8);
        assertThat(s.forced()).isEqualTo(-1); // reasoning ended: the answer is free
        s.accept(5);
        assertThat(s.forced()).isEqualTo(-1);
    }

    @Test
    void aMarkerTheModelWritesItselfEndsTheBudget() {
        ReasoningBudget.State s = new ReasoningBudget(4, new int[] {7, 8}).start();
        s.accept(7);
        s.accept(1); // a partial marker does not count
        s.accept(7);
        s.accept(8);
        for (int i = 0; i < 10; i++) {
            assertThat(s.forced()).isEqualTo(-1);
            s.accept(2);
        }
    }

    @Test
    void aZeroBudgetForcesTheMarkerFirst() {
        ReasoningBudget.State s = new ReasoningBudget(0, new int[] {9}).start();
        assertThat(s.forced()).isEqualTo(9);
        s.accept(9);
        assertThat(s.forced()).isEqualTo(-1);
        assertThatThrownBy(() -> new ReasoningBudget(-1, new int[] {9})).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new ReasoningBudget(1, new int[0])).isInstanceOf(IllegalArgumentException.class);
    }
}
