package io.tqserve.engine;

import io.tqserve.constraint.TokenConstraint;

/**
 * What shapes a sequence's output beyond sampling: a constraint the text must satisfy (JSON schema, tool call),
 * and whether special tokens stay in the text (a template whose tool-call markup is a special token, such as
 * Mistral's {@code [TOOL_CALLS]}).
 *
 * @param constraint        the constraint, or null
 * @param gateToken         with a constraint: a token before which sampling is free (a reasoning model's
 *                          {@code </think>}), or -1
 * @param keepSpecialTokens decode special tokens into the text instead of skipping them
 * @param reasoningBudget   a cap on the tokens spent before the end of reasoning, or null
 */
public record OutputRules(TokenConstraint constraint, int gateToken, boolean keepSpecialTokens,
        ReasoningBudget reasoningBudget) {
    /** Free text, special tokens skipped. */
    public static final OutputRules NONE = new OutputRules(null, -1, false);

    /** Without a reasoning budget. */
    public OutputRules(TokenConstraint constraint, int gateToken, boolean keepSpecialTokens) {
        this(constraint, gateToken, keepSpecialTokens, null);
    }

    /** The same rules with a reasoning budget (or null for none). */
    public OutputRules withReasoningBudget(ReasoningBudget budget) {
        return new OutputRules(constraint, gateToken, keepSpecialTokens, budget);
    }

    /** Whether every token must be drawn on the host (a constraint masks it, or a budget may force it). */
    public boolean needsHostSampling() {
        return constraint != null || reasoningBudget != null;
    }
}
