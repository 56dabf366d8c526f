package io.tqserve.engine;

/**
 * Whether a draft pays, and how long it should be: the cost-aware gate in front of prompt lookup.
 *
 * <p>A verification pass with k draft rows costs the step k extra rows; it saves a pass for every draft token
 * accepted. With a per-token acceptance probability p (the chance a draft token is right given that those before
 * it were), the k-th draft token is reached and accepted with probability p^k, so it adds p^k tokens for the price
 * of one row. Measured in tokens, a row costs {@code c = (time of one extra row) / (time the step spends per
 * token)}. The gate drafts the k-th token only while {@code p^k > c · (1 + MARGIN)}: the longest draft whose last
 * token still pays for its row on average. Every quantity is measured: c by {@link StepCost} from the lane's own
 * passes (plain steps by number of sequences, and the extra time of verification passes per draft row), p by
 * {@link Acceptance} from each sequence's own drafts. Where the gate says no, a sequence still probes with a
 * one-token draft now and then (after 4, 8, ... 64 steps without drafting), so a sequence whose output starts
 * repeating its prompt later is found again; on a workload with nothing to copy the lookup finds nothing and no
 * row is ever added.
 */
final class SpeculationGate {
    /** How much a draft token must return above its row's cost before it is proposed. */
    static final double MARGIN = 0.1;
    /** The row cost assumed until the lane has timed a verification pass: low, so the first drafts get measured. */
    static final double PRIOR_ROW_COST = 0.1;

    private SpeculationGate() {
    }

    /**
     * The longest draft, at most {@code limit} tokens, whose every token pays for its row: the largest k with
     * {@code p^k > rowCost · (1 + MARGIN)}; 0 when not even one does.
     */
    static int worthDrafting(double p, double rowCost, int limit) {
        double bar = rowCost * (1 + MARGIN);
        int k = 0;
        double reach = 1;
        while (k < limit) {
            reach *= p;
            if (reach <= bar) {
                break;
            }
            k++;
        }
        return k;
    }

    /**
     * What a step costs, measured on the lane's thread: exponentially weighted means of the wall time of steps
     * without drafts, per number of sequences in the step, and of the extra time per draft row of verification
     * passes (their time minus the plain step's of the same number of sequences, over their draft rows). One per
     * lane; only the lane's thread touches it.
     */
    static final class StepCost {
        /** Weight of a new observation in the running means. */
        static final double ALPHA = 0.1;
        private double[] plain = new double[17]; // nanos of a step of s sequences without drafts, 0 = not seen
        private double perRow = -1;              // nanos per extra draft row, -1 = not seen
        private double pinned = -1;              // a fixed row cost in tokens, -1 = measured

        /**
         * Fixes the row cost at {@code rowCostTokens} tokens, whatever the passes measure: for tests whose outcome
         * must not depend on the machine's timing (the measured cost moves with load, and so would the drafts).
         */
        void pin(double rowCostTokens) {
            pinned = rowCostTokens;
        }

        /** Records a pass of {@code sequences} decode sequences with {@code draftRows} draft rows in all. */
        void observe(int sequences, int draftRows, long nanos) {
            if (sequences <= 0 || nanos <= 0) {
                return;
            }
            if (sequences >= plain.length) {
                plain = java.util.Arrays.copyOf(plain, Math.max(sequences + 1, 2 * plain.length));
            }
            if (draftRows == 0) {
                plain[sequences] = plain[sequences] == 0 ? nanos : plain[sequences] + ALPHA * (nanos - plain[sequences]);
                return;
            }
            double base = plain[sequences];
            if (base == 0) {
                return; // no plain step of this size yet to compare with
            }
            double extra = Math.max(0, (nanos - base) / draftRows);
            perRow = perRow < 0 ? extra : perRow + ALPHA * (extra - perRow);
        }

        /**
         * The cost of one draft row in tokens of a step of {@code sequences} sequences: the time of a row over the
         * step's time per token; {@link #PRIOR_ROW_COST} until both have been measured.
         */
        double rowCostInTokens(int sequences) {
            if (pinned >= 0) {
                return pinned;
            }
            int s = Math.max(1, sequences);
            double base = s < plain.length ? plain[s] : 0;
            if (perRow < 0 || base == 0) {
                return PRIOR_ROW_COST;
            }
            return perRow / (base / s);
        }
    }

    /**
     * A sequence's acceptance history: the per-token acceptance probability as a decayed ratio of accepted draft
     * tokens to draft tokens tried (a rejected token ends a draft, so the tokens after it were not tried), starting
     * from an even prior worth two tokens. Only the lane's thread touches it.
     */
    static final class Acceptance {
        /** Decay per draft token tried: the estimate follows the last few dozen tokens. */
        static final double DECAY = 0.95;
        /** Steps without a draft before a one-token probe: doubles per failed probe from 4 up to 64. */
        static final int MIN_PROBE = 4;
        static final int MAX_PROBE = 64;
        private double accepted = 1;
        private double tried = 2;
        private int probeEvery = MIN_PROBE;
        private int sinceDraft;

        double p() {
            return accepted / tried;
        }

        /**
         * The draft length to ask the lookup for at a row cost of {@code rowCost} tokens, at most {@code limit}: the
         * gate's length, or a one-token probe when the gate says no and the sequence has gone long enough without.
         */
        int draftLength(double rowCost, int limit) {
            int k = worthDrafting(p(), rowCost, limit);
            if (k > 0) {
                return k;
            }
            if (limit > 0 && ++sinceDraft >= probeEvery) {
                return 1;
            }
            return 0;
        }

        /** How a draft of {@code proposed} tokens fared: {@code accepted} of them were kept. */
        void outcome(int accepted, int proposed) {
            int tried = accepted < proposed ? accepted + 1 : accepted;
            for (int i = 0; i < tried; i++) {
                this.accepted = this.accepted * DECAY + (i < accepted ? 1 : 0);
                this.tried = this.tried * DECAY + 1;
            }
            sinceDraft = 0;
            probeEvery = accepted > 0 ? MIN_PROBE : Math.min(MAX_PROBE, probeEvery * 2);
        }
    }
}
