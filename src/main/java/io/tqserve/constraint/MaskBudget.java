package io.tqserve.constraint;

import java.util.concurrent.CancellationException;
import java.util.function.BooleanSupplier;

/**
 * The work meter of one token mask: every inner loop of a mask (a vocabulary-trie node visited by a lexeme or by the
 * parser, a parser step, a closing bound, a token checked byte by byte) charges its units here. Past the mask's
 * allowance (the lesser of {@link ConstraintLimits#maskWork()} and what is left of the request's
 * {@link ConstraintLimits#requestWork()}) or its wall time it throws {@link ConstraintBudgetException} naming the
 * keyword of the lexeme being walked; when the request is cancelled (or the thread interrupted) it throws
 * {@link CancellationException}. The clock and the cancellation are read every {@link #CHECK_EVERY} units, so a mask
 * never runs more than a few microseconds past a bound. The clock is the thread's CPU time where the JVM measures it
 * (a mask waiting for a core on a loaded machine is not the schema's cost), else wall time. One per mask, one
 * thread.
 */
final class MaskBudget {
    static final int CHECK_EVERY = 4096;

    private final long limit;
    private final boolean requestBound;
    private final long maskWork;
    private final long requestWork;
    private final long deadline;
    private final long maskMillis;
    private final BooleanSupplier cancelled;
    private long used;
    private long nextCheck;
    /** The schema keyword of the part being walked (named by a budget failure). */
    String keyword = "schema";

    /**
     * @param requestLeft work units the request still has
     * @param cancelled   whether the request was cancelled (checked with the clock), or null
     */
    MaskBudget(ConstraintLimits limits, long requestLeft, BooleanSupplier cancelled) {
        this.maskWork = limits.maskWork();
        this.requestWork = limits.requestWork();
        this.requestBound = requestLeft < maskWork;
        this.limit = Math.max(0, Math.min(maskWork, requestLeft));
        this.maskMillis = limits.maskMillis();
        this.deadline = now() + maskMillis * 1_000_000L;
        this.cancelled = cancelled;
        this.nextCheck = Math.min(limit + 1, CHECK_EVERY);
    }

    /** An unmetered budget for internal uses that are bounded otherwise (tests' exact reference walks). */
    static MaskBudget unlimited() {
        return new MaskBudget(ConstraintLimits.DEFAULT.withMaskBudget(Long.MAX_VALUE, Long.MAX_VALUE,
                Long.MAX_VALUE / 2_000_000L), Long.MAX_VALUE, null);
    }

    private static final java.lang.management.ThreadMXBean THREADS =
            java.lang.management.ManagementFactory.getThreadMXBean();
    private static final boolean CPU_CLOCK = THREADS.isCurrentThreadCpuTimeSupported()
            && THREADS.isThreadCpuTimeEnabled();

    private static long now() {
        return CPU_CLOCK ? THREADS.getCurrentThreadCpuTime() : System.nanoTime();
    }

    long used() {
        return used;
    }

    void add(long units) {
        used += units;
        if (used >= nextCheck) {
            check();
        }
    }

    private void check() {
        if (used > limit) {
            throw new ConstraintBudgetException(keyword, requestBound
                    ? "the token masks of this request needed more than " + requestWork + " work units"
                    : "a token mask needed more than " + maskWork + " work units");
        }
        if (Thread.currentThread().isInterrupted() || cancelled != null && cancelled.getAsBoolean()) {
            throw new CancellationException("constrained decoding cancelled");
        }
        if (now() - deadline > 0) {
            throw new ConstraintBudgetException(keyword, "a token mask took more than " + maskMillis + " ms" + (CPU_CLOCK ? " of CPU time" : ""));
        }
        nextCheck = Math.min(limit + 1, used + CHECK_EVERY);
    }
}
