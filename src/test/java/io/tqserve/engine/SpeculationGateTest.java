package io.tqserve.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The cost-aware draft gate: its rule, the lane's measured row cost and a sequence's acceptance history. */
class SpeculationGateTest {
    @Test
    void theKthDraftTokenIsProposedOnlyWhileItsChanceBeatsItsRowCost() {
        // bar = c * 1.1; p^k must stay above it
        assertEquals(3, SpeculationGate.worthDrafting(0.5, 0.1, 16), "0.5^3 = 0.125 > 0.11 >= 0.5^4");
        assertEquals(8, SpeculationGate.worthDrafting(0.9, 0.1, 8), "0.9^8 = 0.43: capped by the limit");
        assertEquals(20, SpeculationGate.worthDrafting(0.9, 0.1, 64), "0.9^20 = 0.122 > 0.11 >= 0.9^21");
        assertEquals(0, SpeculationGate.worthDrafting(0.15, 0.3, 16), "the serial copy workload's acceptance");
        assertEquals(1, SpeculationGate.worthDrafting(0.15, 0.1, 16), "0.15 > 0.11 >= 0.0225");
        assertEquals(0, SpeculationGate.worthDrafting(0.99, 1.0, 16), "a row costing a token never pays");
        assertEquals(0, SpeculationGate.worthDrafting(0.9, 0.1, 0));
    }

    @Test
    void rowCostIsTheExtraTimeOfADraftRowOverTheStepTimePerToken() {
        SpeculationGate.StepCost cost = new SpeculationGate.StepCost();
        assertEquals(SpeculationGate.PRIOR_ROW_COST, cost.rowCostInTokens(1), "nothing measured yet");
        cost.observe(1, 4, 14_000_000); // a verification pass before any plain step: nothing to compare with
        assertEquals(SpeculationGate.PRIOR_ROW_COST, cost.rowCostInTokens(1));
        cost.observe(1, 0, 10_000_000);
        assertEquals(SpeculationGate.PRIOR_ROW_COST, cost.rowCostInTokens(1), "no verification pass timed yet");
        cost.observe(1, 4, 14_000_000); // 1 ms per draft row against 10 ms per token
        assertEquals(0.1, cost.rowCostInTokens(1), 1e-12);
        cost.observe(1, 2, 30_000_000); // 10 ms per row: the mean moves a tenth of the way
        assertEquals(0.19, cost.rowCostInTokens(1), 1e-12);
        // a batched step: 8 sequences in 16 ms (2 ms per token), verification rows 1.9 ms each
        cost.observe(8, 0, 16_000_000);
        assertEquals(1.9 / 2.0, cost.rowCostInTokens(8), 1e-12);
        cost.observe(40, 0, 40_000_000); // more sequences than the table held: it grows
        assertEquals(1.9, cost.rowCostInTokens(40), 1e-12);
        assertEquals(SpeculationGate.PRIOR_ROW_COST, cost.rowCostInTokens(3), "a step size not seen yet");
        cost.observe(1, 3, 5_000_000); // faster than the plain step (noise): no negative cost
        assertEquals(0.9 * 1.9, cost.rowCostInTokens(40), 1e-12);
        cost.pin(0.25); // a pinned cost holds for every step size, whatever is observed after it
        cost.observe(1, 4, 1_000_000_000);
        assertEquals(0.25, cost.rowCostInTokens(1), 1e-12);
        assertEquals(0.25, cost.rowCostInTokens(40), 1e-12);
    }

    @Test
    void rejectedDraftsStopDraftingUntilAProbeIsAccepted() {
        SpeculationGate.Acceptance a = new SpeculationGate.Acceptance();
        assertEquals(0.5, a.p(), 1e-12);
        assertEquals(3, a.draftLength(0.1, 16), "the even prior drafts three tokens at a row cost of 0.1");
        a.outcome(0, 3); // one token tried, rejected
        assertEquals(0.95 / 2.9, a.p(), 1e-12);
        assertEquals(1, a.draftLength(0.1, 16));
        int failures = 1;
        while (a.draftLength(0.1, 16) > 0) { // one-token drafts, each rejected, until the gate says no
            a.outcome(0, 1);
            failures++;
        }
        assertTrue(failures <= 6 && a.p() <= 0.11, failures + " failures, p = " + a.p());
        int every = Math.min(SpeculationGate.Acceptance.MAX_PROBE, SpeculationGate.Acceptance.MIN_PROBE << failures);
        for (int step = 2; step < every; step++) { // the probe interval doubled with every failure
            assertEquals(0, a.draftLength(0.1, 16), "step " + step + " of " + every);
        }
        assertEquals(1, a.draftLength(0.1, 16), "a one-token probe");
        a.outcome(1, 1);
        for (int i = 0; i < 8; i++) {
            a.outcome(4, 4);
        }
        assertTrue(a.p() > 0.9, "p = " + a.p());
        assertEquals(16, a.draftLength(0.05, 16), "a sequence that copies drafts the longest run");
        assertEquals(0, a.draftLength(0.05, 0), "nothing when the sequence may not draft");
    }

    @Test
    void aProbeAfterTheGateSaidNoComesEveryFourStepsWhileProbesSucceed() {
        SpeculationGate.Acceptance a = new SpeculationGate.Acceptance();
        int drafts = 0;
        for (int step = 0; step < 40; step++) {
            if (a.draftLength(2.0, 8) > 0) { // a row costs two tokens: nothing pays
                drafts++;
                a.outcome(1, 1);
            }
        }
        assertEquals(10, drafts);
    }
}
