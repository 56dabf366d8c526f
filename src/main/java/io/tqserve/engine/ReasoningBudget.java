package io.tqserve.engine;

import java.util.Arrays;

/**
 * A cap on the tokens a reasoning model spends thinking ({@code thinking_token_budget}, vLLM's field): once the
 * output holds {@code budget} tokens without the template's end-of-reasoning marker, the marker's tokens are
 * forced one after another, and the model goes on with its answer.
 *
 * @param budget    most tokens before the marker (0: the marker comes first)
 * @param endTokens the tokens of the marker that closes reasoning ({@code </think>})
 */
public record ReasoningBudget(int budget, int[] endTokens) {
    public ReasoningBudget {
        if (budget < 0 || endTokens.length == 0) {
            throw new IllegalArgumentException("a reasoning budget needs budget >= 0 and the end marker's tokens");
        }
        endTokens = endTokens.clone();
    }

    /** One sequence's progress against the budget. Not thread-safe: the sequence's own. */
    final class State {
        private int seen;      // output tokens so far
        private int matched;   // tokens of the end marker matched at the end of the output
        private boolean ended; // the marker was written (or forced)

        /** The token to force next instead of sampling, or -1. */
        int forced() {
            if (ended || seen < budget) {
                return -1;
            }
            return endTokens[matched];
        }

        /** Records an output token. */
        void accept(int token) {
            seen++;
            if (ended) {
                return;
            }
            if (token == endTokens[matched]) {
                matched++;
            } else {
                matched = token == endTokens[0] ? 1 : 0;
            }
            if (matched == endTokens.length) {
                ended = true;
            }
        }
    }

    State start() {
        return new State();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ReasoningBudget r && r.budget == budget && Arrays.equals(r.endTokens, endTokens);
    }

    @Override
    public int hashCode() {
        return 31 * budget + Arrays.hashCode(endTokens);
    }

    @Override
    public String toString() {
        return "ReasoningBudget[budget=" + budget + ", endTokens=" + Arrays.toString(endTokens) + "]";
    }
}
