package io.tqserve.constraint;

import java.util.Arrays;

/**
 * One sequence's position in a {@link TokenConstraint}: masks the logits before each draw and follows the drawn
 * tokens. End-of-sequence tokens are allowed only in accepting states, and are the only choice once the text is
 * complete. With a gate token (a reasoning model's {@code </think>}), sampling is free until the gate token is
 * drawn, and the gate token is forced while the budget still leaves room to complete the constrained text. Not
 * thread-safe: one per sequence, used by one thread at a time.
 */
public final class ConstraintState {
    private final TokenConstraint constraint;
    private final int[] eos;
    private final int gateToken;
    private boolean gated;
    private int state;
    private float[] saved;

    /**
     * @param eos       end-of-sequence token ids
     * @param gateToken a token before which sampling is free (the constraint starts after it), or -1
     */
    public ConstraintState(TokenConstraint constraint, int[] eos, int gateToken) {
        this.constraint = constraint;
        this.eos = eos.clone();
        this.gateToken = gateToken;
        this.gated = gateToken >= 0;
        this.state = constraint.initialState();
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
                Arrays.fill(x, 0, vocab, Float.NEGATIVE_INFINITY);
                x[gateToken] = keep;
            }
            for (int e : eos) {
                if (e < vocab && e != gateToken) {
                    x[e] = Float.NEGATIVE_INFINITY; // the constrained text must still come
                }
            }
            return;
        }
        TokenConstraint.Mask m = constraint.mask(state);
        int n = m.within(remaining - 1);
        if (saved == null) {
            saved = new float[vocab];
        }
        int[] tokens = m.tokens();
        for (int i = 0; i < n; i++) {
            saved[i] = x[tokens[i]];
        }
        boolean accept = constraint.accepting(state);
        float[] eosLogits = new float[eos.length];
        for (int i = 0; i < eos.length; i++) {
            eosLogits[i] = eos[i] < x.length ? x[eos[i]] : 0f;
        }
        Arrays.fill(x, 0, vocab, Float.NEGATIVE_INFINITY);
        for (int i = 0; i < n; i++) {
            x[tokens[i]] = saved[i];
        }
        if (accept) {
            for (int i = 0; i < eos.length; i++) {
                if (eos[i] < vocab) {
                    x[eos[i]] = eosLogits[i];
                }
            }
        }
        if (n == 0 && !accept) {
            throw new IllegalStateException("constrained decoding left no token to choose (state " + state + ")");
        }
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
        int next = constraint.step(state, token);
        if (next < 0) {
            throw new IllegalStateException("token " + token + " is not allowed by the constraint");
        }
        state = next;
    }

    /** Whether the text so far is complete and valid (and the gate, if any, passed). */
    public boolean accepting() {
        return !gated && constraint.accepting(state);
    }
}
