package io.tqserve.constraint;

import io.tqserve.constraint.Parser.Config;

/**
 * One sequence's position in a {@link TokenConstraint}: masks the logits before each draw and follows the drawn
 * tokens. End-of-sequence tokens are allowed only when the text so far is a complete document, and are the only
 * choice once nothing can follow. With a gate token (a reasoning model's {@code </think>}), sampling is free until
 * the gate token is drawn, and the gate token is forced while the budget still leaves room to complete the
 * constrained text. Not thread-safe: one per sequence, used by one thread at a time.
 *
 * <p>Budget: the state keeps a closing plan (tokens that finish the document). A token is allowed when the closing
 * bound after it fits in the tokens left after it; the plan's next token is always allowed (following it leaves
 * the rest of the plan, one token shorter), so with {@code remaining >= minTokens()} at the start a complete
 * document always fits.
 */
public final class ConstraintState {
    private final TokenConstraint constraint;
    private final int[] eos;
    private final int gateToken;
    private boolean gated;
    private final java.util.function.BooleanSupplier cancelled;
    private long workUsed;
    private Config[] configs;
    private int[] plan;
    private int planPos;

    /**
     * @param eos       end-of-sequence token ids
     * @param gateToken a token before which sampling is free (the constraint starts after it), or -1
     */
    public ConstraintState(TokenConstraint constraint, int[] eos, int gateToken) {
        this(constraint, eos, gateToken, null);
    }

    /**
     * @param cancelled whether the request was cancelled: a mask in progress then stops with a
     *                  {@link java.util.concurrent.CancellationException} (null: never)
     */
    public ConstraintState(TokenConstraint constraint, int[] eos, int gateToken,
            java.util.function.BooleanSupplier cancelled) {
        this.cancelled = cancelled;
        this.constraint = constraint;
        this.eos = eos.clone();
        this.gateToken = gateToken;
        this.gated = gateToken >= 0;
        this.configs = constraint.initial();
        this.plan = constraint.initialPlan();
    }

    /**
     * Leaves in {@code x} (vocab logits, changed in place) only the tokens the constraint allows; every other entry
     * becomes negative infinity.
     *
     * @param remaining tokens that may still be generated, this one included (at least 1)
     */
    public void mask(float[] x, int remaining) {
        int vocab = constraint.vocabulary().size();
        if (gated) {
            if (remaining <= constraint.minTokens() + 1) {
                float keep = x[gateToken];
                java.util.Arrays.fill(x, 0, vocab, Float.NEGATIVE_INFINITY);
                x[gateToken] = keep;
            }
            for (int e : eos) {
                if (e < vocab && e != gateToken) {
                    x[e] = Float.NEGATIVE_INFINITY; // the constrained text must still come
                }
            }
            return;
        }
        long[] m = allowed(remaining);
        for (int w = 0; w < m.length; w++) {
            long bits = m[w];
            if (bits == -1L) {
                continue;
            }
            int base = w << 6;
            int end = Math.min(vocab, base + 64);
            for (int i = base; i < end; i++) {
                if ((bits & (1L << i)) == 0) {
                    x[i] = Float.NEGATIVE_INFINITY;
                }
            }
        }
    }

    /**
     * The tokens allowed now as a bitset over the vocabulary (EOS included when the text is complete).
     *
     * @param remaining tokens that may still be generated, this one included
     * @throws ConstraintBudgetException when this mask, or the request's masks together, exceed their work budget
     *                                   ({@link ConstraintLimits#maskWork()}, {@link ConstraintLimits#requestWork()})
     *                                   or the mask its time ({@link ConstraintLimits#maskMillis()})
     */
    public long[] allowed(int remaining) {
        TokenConstraint c = constraint;
        MaskBudget meter = new MaskBudget(c.limits(), c.limits().requestWork() - workUsed, cancelled);
        long[] m;
        try {
            m = c.allowed(configs, remaining - 1, false, meter);
        } finally {
            workUsed += meter.used();
        }
        if (plan != null && planPos < plan.length) {
            int t = plan[planPos];
            m[t >>> 6] |= 1L << t;
        }
        boolean accept = accepting();
        boolean any = false;
        for (long w : m) {
            if (w != 0) {
                any = true;
                break;
            }
        }
        if (!any && !accept) {
            // the bound of the state fits the budget (an invariant); spell its closing text afresh
            plan = c.closing().plan(configs);
            planPos = 0;
            if (plan != null && plan.length > 0) {
                m[plan[0] >>> 6] |= 1L << plan[0];
            }
        }
        if (!any && !accept && (plan == null || plan.length == 0)) {
            throw new IllegalStateException("constrained decoding left no token to choose");
        }
        if (accept) {
            for (int e : eos) {
                if (e >= 0 && e < c.vocabulary().size()) {
                    m[e >>> 6] |= 1L << e;
                }
            }
        }
        return m;
    }

    /** Follows a drawn token (which {@link #mask} allowed). */
    public void advance(int token) {
        if (gated) {
            if (token == gateToken) {
                gated = false;
            }
            return;
        }
        for (int e : eos) {
            if (e == token) {
                return;
            }
        }
        byte[] b = constraint.vocabulary().bytes(token);
        Config[] next = b == null || b.length == 0 ? Parser.NONE : constraint.parser().step(configs, b);
        if (next.length == 0) {
            throw new IllegalStateException("token " + token + " is not allowed by the constraint");
        }
        configs = next;
        if (plan != null && planPos < plan.length && plan[planPos] == token) {
            planPos++;
        } else {
            plan = null;
        }
    }

    /** Work units the masks of this sequence have taken so far. */
    public long workUsed() {
        return workUsed;
    }

    /** Whether the text so far is complete and valid (and the gate, if any, passed). */
    public boolean accepting() {
        return !gated && constraint.parser().accepting(configs);
    }
}
