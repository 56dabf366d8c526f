package io.tqserve.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The cost-aware draft gate: its rule, the lane's measured row cost and a sequence's acceptance history. */
class SpeculationGateTest {
    @Test
    void theDraftLengthIsTheOneWithTheMostTokensPerUnitOfTime() {
        // E(d) = 1 + p + ... + p^d tokens for 1 + d*c; the best rate must beat a plain step's 1 by 10%
        assertEquals(2, SpeculationGate.worthDrafting(0.5, 0.1, 16), "1.75/1.2 = 1.458 > 1.875/1.3 = 1.442");
        assertEquals(8, SpeculationGate.worthDrafting(0.9, 0.1, 8), "still rising at 8: capped by the limit");
        assertEquals(10, SpeculationGate.worthDrafting(0.9, 0.1, 64), "6.86/2.0 = 3.43 is the peak");
        assertEquals(0, SpeculationGate.worthDrafting(0.15, 0.3, 16), "1.15/1.3 < 1");
        assertEquals(0, SpeculationGate.worthDrafting(0.15, 0.1, 16), "1.15/1.1 = 1.045: not 10% better");
        assertEquals(1, SpeculationGate.worthDrafting(0.25, 0.1, 16), "1.25/1.1 = 1.136 > 1.3125/1.2 = 1.094");
        assertEquals(0, SpeculationGate.worthDrafting(0.99, 1.0, 16), "a row costing a token never pays");
        assertEquals(0, SpeculationGate.worthDrafting(0.9, 0.1, 0));
    }

    @Test
    void measuredPassCostsPerDraftLengthDecideOnASingleSequence() {
        // the serial lane's curve on an AVX2 core (pass CPU time over a one-row step): 3 draft rows cost about what
        // 2 do, so at p = 0.7 the best draft is 3 (2.53/1.74 = 1.46) where linear costs would say 2
        double[] curve = {1, 1.29, 1.69, 1.74, 2.13, 2.6, 3.12, 3.4, 3.72};
        assertEquals(3, SpeculationGate.worthDrafting(0.7, d -> curve[d], 8));
        assertEquals(3, SpeculationGate.worthDrafting(0.95, d -> curve[d], 8), "3.71/1.74 = 2.13 > 7.40/3.72 = 1.99");
        assertEquals(1, SpeculationGate.worthDrafting(0.5, d -> curve[d], 8), "1.5/1.29 = 1.16");
        SpeculationGate.StepCost cost = new SpeculationGate.StepCost();
        cost.observe(1, 0, 10_000_000);
        cost.observe(1, 2, 16_900_000);
        cost.observe(1, 3, 17_400_000);
        assertEquals(1 + 2 * cost.rowCostInTokens(1), cost.passCost(1).of(2), 1e-12,
                "timed once (perhaps cold): no more than the linear estimate");
        cost.observe(1, 2, 16_900_000);
        cost.observe(1, 3, 17_400_000);
        SpeculationGate.PassCost c = cost.passCost(1);
        assertEquals(1.69, c.of(2), 1e-12);
        assertEquals(1.74, c.of(3), 1e-12, "measured at its own length");
        double row = cost.rowCostInTokens(1); // the lower median of 6.9 ms / 2 and 7.4 ms / 3, over 10 ms
        assertEquals(7.4 / 3 / 10, row, 1e-12);
        assertEquals(1 + 5 * row, c.of(5), 1e-12, "a length not timed yet: the linear estimate");
        assertEquals(1 + 3 * cost.rowCostInTokens(4), cost.passCost(4).of(3), 1e-12, "several sequences: linear");
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
        cost.observe(1, 2, 30_000_000); // 10 ms per row once: of two, the smaller holds
        assertEquals(0.1, cost.rowCostInTokens(1), 1e-12);
        cost.observe(1, 2, 18_000_000); // 4 ms per row: the median of 1, 10 and 4
        assertEquals(0.4, cost.rowCostInTokens(1), 1e-12);
        // a batched step: 8 sequences in 16 ms (2 ms per token), verification rows 4 ms each
        cost.observe(8, 0, 16_000_000);
        assertEquals(4.0 / 2.0, cost.rowCostInTokens(8), 1e-12);
        cost.observe(40, 0, 40_000_000); // more sequences than the table held: it grows
        assertEquals(4.0, cost.rowCostInTokens(40), 1e-12);
        assertEquals(SpeculationGate.PRIOR_ROW_COST, cost.rowCostInTokens(3), "a step size not seen yet");
        cost.observe(1, 3, 5_000_000); // faster than the plain step (noise): no negative cost
        cost.observe(1, 3, 5_000_000); // the lower median of 0, 0, 1, 4, 10
        assertEquals(1.0, cost.rowCostInTokens(40), 1e-12);
        for (int i = 0; i < SpeculationGate.StepCost.WINDOW; i++) {
            cost.observe(1, 1, 16_000_000); // a window of 6 ms rows replaces every older one
        }
        assertEquals(0.6, cost.rowCostInTokens(1), 1e-12);
        cost.pin(0.25); // a pinned cost holds for every step size, whatever is observed after it
        cost.observe(1, 4, 1_000_000_000);
        assertEquals(0.25, cost.rowCostInTokens(1), 1e-12);
        assertEquals(0.25, cost.rowCostInTokens(40), 1e-12);
    }

    @Test
    void aPassOrAPlainStepTimedColdIsDroppedAtTheNextObservation() {
        // the bench's first lane on the embedded model: the first plain steps and the first one-token pass run
        // while the JIT compiles them, at several times their warm cost
        SpeculationGate.StepCost cost = new SpeculationGate.StepCost();
        cost.observe(1, 0, 40_000_000);
        cost.observe(1, 1, 80_000_000);
        assertEquals(2.0, cost.passCost(1).of(1), 1e-12, "both cold: their ratio");
        cost.observe(1, 0, 2_000_000);
        assertEquals(20.0, cost.rowCostInTokens(1), 1e-12, "a warm plain step replaces the cold one at once");
        cost.observe(1, 1, 3_800_000);
        assertEquals(1.9, cost.passCost(1).of(1), 1e-12, "and a warm pass the cold pass");
        for (int i = 0; i < 3; i++) {
            cost.observe(1, 0, 2_000_000);
        }
        cost.observe(1, 0, 30_000_000); // one slow plain step (a collection, a page fault) among warm ones
        assertEquals(1.9, cost.passCost(1).of(1), 1e-12, "does not move the estimate");
        assertEquals(0.9, cost.rowCostInTokens(1), 1e-12, "the row: (3.8 - 2) ms over 2 ms, the cold one dropped");
    }

    @Test
    void rejectedDraftsStopDraftingUntilAProbeIsAccepted() {
        SpeculationGate.Acceptance a = new SpeculationGate.Acceptance();
        assertEquals(0.5, a.p(), 1e-12);
        assertEquals(2, a.draftLength(0.1, 16), "the even prior drafts two tokens at a row cost of 0.1");
        a.outcome(0, 3); // one token tried, rejected
        assertEquals(0.95 / 2.9, a.p(), 1e-12);
        assertEquals(1, a.draftLength(0.1, 16));
        int failures = 1;
        while (a.draftLength(0.1, 16) > 0) { // one-token drafts, each rejected, until the gate says no
            a.outcome(0, 1);
            failures++;
        }
        assertTrue(failures <= 4 && a.p() <= 0.21, failures + " failures, p = " + a.p());
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
    void aProbeAfterTheGateSaidNoComesEveryFourStepsWhileProbesSucceedAndAreCheap() {
        SpeculationGate.Acceptance a = new SpeculationGate.Acceptance();
        for (int i = 0; i < 4; i++) {
            a.outcome(1, 2); // p about 0.49: at a row cost of 0.4, no draft length pays
        }
        double p = a.p();
        assertEquals(0, SpeculationGate.worthDrafting(p, 0.4, 8));
        assertTrue(1.4 - 1 - p <= 0, "a probe at row cost 0.4 returns at least what it costs: p = " + p);
        int drafts = 0;
        for (int step = 0; step < 40; step++) {
            if (a.draftLength(0.4, 8) > 0) {
                drafts++;
                a.outcome(1, 2); // the probe's token accepted (the gate's estimate stays where it was)
            }
        }
        assertEquals(10, drafts);
    }

    @Test
    void probesThatLoseAreSpacedByWhatTheyLose() {
        // a 2-row pass costs 2.2 plain steps (a Zen 4 core, the embedded model from memory) and p is about 0.77:
        // each probe loses 2.2 - (1 + p) steps, so they come at least (1.2 - p) / 1% steps apart
        // (further rows cost 0.6 each: at full acceptance an 8-token draft would pay, 9 tokens for 6.4 steps)
        SpeculationGate.Acceptance a = new SpeculationGate.Acceptance();
        SpeculationGate.PassCost cost = d -> 2.2 + 0.6 * (d - 1);
        int probes = 0;
        double lost = 0;
        int last = -1;
        double spacing = 0;
        for (int step = 0; step < 1000; step++) {
            if (a.draftLength(cost, 8) > 0) {
                if (last >= 0) {
                    assertTrue(step - last >= spacing, "a probe " + (step - last) + " steps after the last, p = " + a.p());
                }
                last = step;
                probes++;
                lost += 1.2 - a.p();
                a.outcome(probes % 13 < 10 ? 1 : 0, 1); // 10 of 13 probes accepted
                spacing = Math.min(128, (1.2 - a.p()) / 0.01);
            }
        }
        assertTrue(probes >= 10 && probes <= 40, probes + " probes in 1000 steps");
        assertTrue(lost <= 0.011 * 1000, "the probes lost " + lost + " steps of 1000");
        // where nothing comes back, the spacing is the cap: a cost measured high once is measured again
        SpeculationGate.Acceptance none = new SpeculationGate.Acceptance();
        for (int i = 0; i < 50; i++) {
            none.outcome(0, 1);
        }
        assertEquals(SpeculationGate.Acceptance.MAX_COST_PROBE, none.probeEvery(d -> 1.8 + 3.0 * d, 8));
        assertEquals(SpeculationGate.Acceptance.MAX_PROBE, none.probeEvery(d -> 1 + 0.01 * d, 8),
                "a cheap row keeps the doubling interval of failed probes");
    }

    @Test
    void whereNoAcceptanceWouldPayProbesComeAtTheCapEvenWhenAccepted() {
        // the embedded model's serial lane: a one-token pass costs 1.9 plain steps and each further row 0.9, so
        // even a draft of 8 tokens all accepted returns 9 tokens for 8.2 steps, under the margin; a probe whose
        // token is accepted returns 2 tokens for 1.9 and would come every four steps, each about breaking even
        SpeculationGate.PassCost cost = d -> 1 + 0.9 * d;
        assertEquals(0, SpeculationGate.worthDrafting(1.0, cost, 8));
        SpeculationGate.Acceptance a = new SpeculationGate.Acceptance();
        int probes = 0;
        int last = -1;
        for (int step = 0; step < 1000; step++) {
            if (a.draftLength(cost, 8) > 0) {
                assertEquals(SpeculationGate.Acceptance.MAX_COST_PROBE, step - last, "probe spacing");
                last = step;
                probes++;
                a.outcome(1, 1);
            }
        }
        assertEquals(1000 / SpeculationGate.Acceptance.MAX_COST_PROBE, probes);
        assertTrue(a.p() > 0.9, "p = " + a.p());
        // where a longer draft would pay at full acceptance, the same accepted probes come every four steps
        SpeculationGate.PassCost cheapRows = d -> 1.9 + 0.3 * (d - 1);
        assertTrue(SpeculationGate.worthDrafting(1.0, cheapRows, 8) > 0);
        assertEquals(SpeculationGate.Acceptance.MIN_PROBE, a.probeEvery(cheapRows, 8));
    }

    @Test
    void aDraftLengthTimedOnlyWhileColdGivesWayToThePerRowCost() {
        SpeculationGate.StepCost cost = new SpeculationGate.StepCost();
        cost.observe(1, 0, 10_000_000);   // a plain step: 10 ms
        cost.observe(1, 4, 300_000_000);  // a 4-row draft timed while the JIT compiled: 30 plain steps
        assertEquals(30.0, cost.passCost(1).of(4), 1e-9, "a fresh mean of that length is its cost");
        for (int i = 0; i < 300; i++) {   // then plain steps and one-token probes at 1.3 plain steps
            cost.observe(1, 0, 10_000_000);
            if (i % 4 == 0) {
                cost.observe(1, 1, 13_000_000);
            }
        }
        double row = cost.rowCostInTokens(1);
        assertTrue(row < 1.0, "the per-row cost recovered with the probes: " + row);
        assertEquals(1 + 4 * row, cost.passCost(1).of(4), 1e-9, "the stale 4-row mean no longer holds drafts off");
        assertEquals(1.3, cost.passCost(1).of(1), 1e-9, "the probes keep the one-row length's own mean fresh");
    }

    @Test
    void aLaneThatHasNotTimedAPassForAWhileAsksTheNextSequenceForAProbe() {
        // the bench's first lane on the padded copy model: its first verification pass, timed cold, cost 5.6 plain
        // steps; at that cost no draft pays and probes are 128 steps apart, more than a request of 96 tokens lasts
        SpeculationGate.StepCost cost = new SpeculationGate.StepCost();
        cost.observe(1, 0, 25_000_000);
        cost.observe(1, 2, 140_000_000);
        assertTrue(!cost.passCost(1).wantsTiming(), "a pass was just timed");
        for (int i = 1; i < SpeculationGate.StepCost.RETIME_PASSES; i++) {
            cost.observe(1, 0, 25_000_000);
        }
        assertTrue(!cost.passCost(1).wantsTiming(), (SpeculationGate.StepCost.RETIME_PASSES - 1) + " passes after it");
        SpeculationGate.Acceptance fresh = new SpeculationGate.Acceptance();
        assertEquals(0, fresh.draftLength(cost.passCost(1), 8), "a new sequence's first step: the gate says no");
        cost.observe(1, 0, 25_000_000);
        assertTrue(cost.passCost(1).wantsTiming());
        assertTrue(cost.passCost(4).wantsTiming(), "a batched step too");
        assertEquals(1, fresh.draftLength(cost.passCost(1), 8), "its next step probes");
        assertEquals(0, fresh.draftLength(cost.passCost(1), 0), "not where it may not draft");
        cost.observe(1, 1, 35_000_000); // the probe, warm: 1.4 plain steps
        assertTrue(!cost.passCost(1).wantsTiming());
        assertEquals(1.4, cost.passCost(1).of(1), 1e-12);
        assertEquals(0.4, cost.rowCostInTokens(1), 1e-12, "the lower of 4.6 and 0.4");
        SpeculationGate.StepCost pinned = new SpeculationGate.StepCost();
        pinned.pin(0.5);
        for (int i = 0; i < 2 * SpeculationGate.StepCost.RETIME_PASSES; i++) {
            pinned.observe(1, 0, 25_000_000);
        }
        assertTrue(!pinned.passCost(1).wantsTiming(), "a pinned cost needs no timing");
    }
}
