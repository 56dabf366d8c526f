package io.tqserve.engine;

/**
 * Whether a draft pays, and how long it should be: the cost-aware gate in front of prompt lookup.
 *
 * <p>A verification pass with d draft rows emits the tokens accepted plus one. With a per-token acceptance
 * probability p (the chance a draft token is right given that those before it were), the i-th draft token is reached
 * and accepted with probability p^i, so the pass emits {@code E(d) = 1 + p + ... + p^d} tokens on average. It costs
 * {@code C(d)} in units of the sequence's share of a plain step ({@code C(0) = 1}): the gate picks the d that
 * maximises the sequence's tokens per unit of time, {@code E(d) / C(d)}, and drafts only when that beats a plain
 * step by {@code MARGIN}. A marginal rule (draft the k-th token while {@code p^k} exceeds a row's cost) would
 * compare each row with a plain step rather than with what the shorter draft already gains, and assume every row
 * costs the same; they do not (with AVX2 the multi-row matmul's tiles take activation rows in pairs, so a pass's
 * third row costs more than its fourth), so {@code C} is measured per draft length where it can be. Every quantity
 * is measured: {@code C} by {@link StepCost} from the lane's own passes (plain steps by number of sequences; on a
 * one-sequence step each draft length's passes, elsewhere the extra time per draft row), p by {@link Acceptance}
 * from each sequence's own drafts. Where the gate says no, a sequence still probes with a one-token draft now and
 * then (after 4, 8, ... 64 steps without drafting), so a sequence whose output starts repeating its prompt later is
 * found again; on a workload with nothing to copy the lookup finds nothing and no row is ever added. A probe is
 * itself a pass that does not pay (the gate said so), so probes are also spaced by what they are expected to lose:
 * at least {@code (C(1) - 1 - p) / }{@link Acceptance#PROBE_SHARE} steps apart (at most
 * {@link Acceptance#MAX_COST_PROBE}), which keeps their cost near 1% of the decode time where an extra row is dear
 * (a Zen 4 core decoding the embedded model from memory: a 2-row pass cost 2.2 plain steps, and probes every four
 * steps made decoding 3-9% slower with speculation on than off) and leaves them every four steps where it is cheap.
 * Where no draft would pay even with every token accepted, probes come at that cap whatever they return: the
 * acceptance they measure cannot change the answer, only a new timing of the pass can.
 */
final class SpeculationGate {
    /** How much more a draft must return per unit of time than a plain step before it is proposed. */
    static final double MARGIN = 0.1;
    /** The row cost assumed until the lane has timed a verification pass: low, so the first drafts get measured. */
    static final double PRIOR_ROW_COST = 0.1;

    private SpeculationGate() {
    }

    /** What a pass with d draft rows of a sequence costs, in units of the sequence's share of a plain step. */
    @FunctionalInterface
    interface PassCost {
        double of(int draftRows);

        /**
         * Whether the lane has gone {@link StepCost#RETIME_PASSES} passes without timing a verification pass: the
         * next sequence that can draft then probes, whatever its own probe spacing, so costs measured high once
         * (a pass timed while the JIT compiled it) are measured again even where every request is shorter than
         * the spacing. False unless the lane says so.
         */
        default boolean wantsTiming() {
            return false;
        }

        /** Every draft row costs {@code rowCost} tokens. */
        static PassCost linear(double rowCost) {
            return d -> 1 + d * rowCost;
        }

        /** {@code cost}, with {@link #wantsTiming()} as given. */
        static PassCost of(PassCost cost, boolean wantsTiming) {
            if (!wantsTiming) {
                return cost;
            }
            return new PassCost() {
                @Override
                public double of(int draftRows) {
                    return cost.of(draftRows);
                }

                @Override
                public boolean wantsTiming() {
                    return true;
                }
            };
        }
    }

    /** {@link #worthDrafting(double, PassCost, int)} where every draft row costs {@code rowCost} tokens. */
    static int worthDrafting(double p, double rowCost, int limit) {
        return worthDrafting(p, PassCost.linear(rowCost), limit);
    }

    /**
     * The draft length, at most {@code limit} tokens, with the most tokens per unit of time,
     * {@code E(d) / C(d)}; 0 when none beats a plain step by {@link #MARGIN} (the shortest of equal ones).
     */
    static int worthDrafting(double p, PassCost cost, int limit) {
        int best = 0;
        double bestRate = 1 + MARGIN;
        double expected = 1;
        double reach = 1;
        for (int d = 1; d <= limit; d++) {
            reach *= p;
            expected += reach;
            double rate = expected / cost.of(d);
            if (rate > bestRate) {
                best = d;
                bestRate = rate;
            }
        }
        return best;
    }

    /** The clock steps are timed by: the calling thread's CPU time where the JVM has it, else the wall clock. */
    static long now() {
        return CPU_TIME ? THREADS.getCurrentThreadCpuTime() : System.nanoTime();
    }

    private static final java.lang.management.ThreadMXBean THREADS =
            java.lang.management.ManagementFactory.getThreadMXBean();
    private static final boolean CPU_TIME = THREADS.isCurrentThreadCpuTimeSupported();

    /**
     * What a step costs, measured on the lane's thread by {@link #now()} (its CPU time: a step the scheduler
     * delays on a shared machine is not charged the wait): the recent times of steps without drafts, per number of
     * sequences in the step, of one-sequence verification passes per draft length, and the extra time per draft row
     * of verification passes (their time minus the plain step's of the same number of sequences, over their draft
     * rows). Each is the lower median of its last {@link #WINDOW} observations ({@link Window}): a pass timed while
     * the JIT still compiles its path costs several times a warm one, and as the start of a running mean it held
     * the estimate off for dozens of observations (on the embedded model a first one-token pass timed at 3.9 plain
     * steps kept a whole workload's probes 128 steps apart, and plain steps timed cold made a one-token pass look
     * like half a plain step); the median drops such an outlier at the second observation and follows a real
     * change within half a window. One per lane; only the lane's thread touches it.
     */
    static final class StepCost {
        /** Observations each estimate is the lower median of. */
        static final int WINDOW = 8;
        /** Passes after which a draft length's own cost gives way to the per-row estimate. */
        static final int STALE_PASSES = 256;
        /** Passes without a timed verification pass after which the lane asks for one ({@link PassCost#wantsTiming}). */
        static final int RETIME_PASSES = 128;
        private Window[] plain = new Window[17]; // a step of s sequences without drafts, null = not seen
        private final Window[] single = new Window[Sequence.MAX_DRAFT + 1]; // one-sequence pass by draft rows
        private final long[] singleAt = new long[Sequence.MAX_DRAFT + 1]; // passes observed when single[d] was
        private final Window perRow = new Window();  // nanos per extra draft row
        private long passes;                     // every pass observed, plain or verifying
        private long verifiedAt;                 // passes observed when the last verifying pass was
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
            passes++;
            if (sequences >= plain.length) {
                plain = java.util.Arrays.copyOf(plain, Math.max(sequences + 1, 2 * plain.length));
            }
            if (draftRows == 0) {
                window(plain, sequences).add(nanos);
                return;
            }
            verifiedAt = passes;
            if (sequences == 1 && draftRows < single.length) {
                window(single, draftRows).add(nanos);
                singleAt[draftRows] = passes;
            }
            double base = plainNanos(sequences);
            if (base == 0) {
                return; // no plain step of this size yet to compare with
            }
            perRow.add(Math.max(0, (nanos - base) / draftRows));
        }

        private static Window window(Window[] windows, int i) {
            if (windows[i] == null) {
                windows[i] = new Window();
            }
            return windows[i];
        }

        /** The estimated nanos of a plain step of {@code sequences} sequences, 0 when none was seen. */
        private double plainNanos(int sequences) {
            return sequences < plain.length && plain[sequences] != null ? plain[sequences].estimate() : 0;
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
            double base = plainNanos(s);
            if (perRow.isEmpty() || base == 0) {
                return PRIOR_ROW_COST;
            }
            return perRow.estimate() / (base / s);
        }

        /**
         * What a pass with d draft rows of one sequence costs in a step of {@code sequences} sequences, in that
         * sequence's share of a plain step: on a one-sequence step the measured passes of that draft length over the
         * plain step, where both were timed and that length was timed within the last {@link #STALE_PASSES} passes;
         * otherwise {@code 1 + d · }{@link #rowCostInTokens} (and the lower of the two while the length was timed
         * only once: that timing may be the cold one, and a length held off is not timed again). A length's own
         * estimate goes stale because a length the
         * gate stops choosing is never timed again: passes timed while the JIT still compiled the verifying path
         * (a server's first requests) cost several plain steps, and kept as the length's cost they would hold that
         * length off for good; the per-row cost, which every verifying pass (the one-token probes too) updates,
         * stands in until the length is tried again.
         */
        PassCost passCost(int sequences) {
            double row = rowCostInTokens(sequences);
            double base = plainNanos(1);
            boolean retime = pinned < 0 && passes - verifiedAt >= RETIME_PASSES;
            if (pinned >= 0 || sequences > 1 || base == 0) {
                return PassCost.of(PassCost.linear(row), retime);
            }
            return PassCost.of(d -> {
                double linear = 1 + d * row;
                if (d >= single.length || single[d] == null || passes - singleAt[d] > STALE_PASSES) {
                    return linear;
                }
                double own = single[d].estimate() / base;
                return single[d].count() >= 2 ? own : Math.min(own, linear); // one timing may be a cold one
            }, retime);
        }
    }

    /**
     * The last {@link StepCost#WINDOW} observations of one cost and their lower median (of an even count, the lower
     * of the two middle values: of two observations, the smaller), so one outlier among them never sets the
     * estimate. Only the lane's thread touches it.
     */
    static final class Window {
        private final double[] last = new double[StepCost.WINDOW];
        private final double[] sorted = new double[StepCost.WINDOW];
        private int count;
        private int next;
        private double estimate;

        void add(double x) {
            last[next] = x;
            next = (next + 1) % last.length;
            count = Math.min(count + 1, last.length);
            System.arraycopy(last, 0, sorted, 0, count);
            java.util.Arrays.sort(sorted, 0, count);
            estimate = sorted[(count - 1) / 2];
        }

        boolean isEmpty() {
            return count == 0;
        }

        /** How many observations it holds (at most {@link StepCost#WINDOW}). */
        int count() {
            return count;
        }

        /** The lower median of the observations held; 0 when there are none. */
        double estimate() {
            return estimate;
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
        /** The share of the decode time probes may lose: their spacing in steps is at least their loss over it. */
        static final double PROBE_SHARE = 0.01;
        /** The most steps a probe's cost can space it: a row cost measured high once is measured again. */
        static final int MAX_COST_PROBE = 128;
        private double accepted = 1;
        private double tried = 2;
        private int probeEvery = MIN_PROBE;
        private int sinceDraft;

        double p() {
            return accepted / tried;
        }

        /** {@link #draftLength(PassCost, int)} where every draft row costs {@code rowCost} tokens. */
        int draftLength(double rowCost, int limit) {
            return draftLength(PassCost.linear(rowCost), limit);
        }

        /**
         * The draft length to ask the lookup for at these pass costs, at most {@code limit}: the gate's length, or a
         * one-token probe when the gate says no and the sequence has gone long enough without ({@link #probeEvery})
         * or the lane wants a pass timed ({@link PassCost#wantsTiming}).
         */
        int draftLength(PassCost cost, int limit) {
            int k = worthDrafting(p(), cost, limit);
            if (k > 0) {
                return k;
            }
            if (limit > 0 && (++sinceDraft >= probeEvery(cost, limit) || cost.wantsTiming())) {
                return 1;
            }
            return 0;
        }

        /**
         * Steps without a draft before the next probe: the doubling interval of failed probes, or more where a
         * one-token pass is expected to lose more than {@link #PROBE_SHARE} of that many steps
         * ({@code C(1)} against the {@code 1 + p} tokens it returns), up to {@link #MAX_COST_PROBE}; and
         * {@link #MAX_COST_PROBE} where no draft of up to {@code limit} tokens would pay even if every token were
         * accepted. A probe is there to learn the acceptance, and at such costs no acceptance makes drafting pay:
         * it can only time a pass again (a cost measured high once is measured again). Probes accepted at a cost
         * near a plain step's per token would otherwise come every four steps, each expected to about break even,
         * and on the embedded model (a one-token pass at 1.9 plain steps, its tokens accepted) they made the serial
         * lane 5-9% slower with speculation on than off.
         */
        int probeEvery(PassCost cost, int limit) {
            if (worthDrafting(1.0, cost, limit) == 0) {
                return MAX_COST_PROBE;
            }
            double loss = cost.of(1) - 1 - p();
            if (!(loss > 0)) {
                return probeEvery;
            }
            return (int) Math.max(probeEvery, Math.min(MAX_COST_PROBE, Math.ceil(loss / PROBE_SHARE)));
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
