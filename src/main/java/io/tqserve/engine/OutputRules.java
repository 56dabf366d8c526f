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
 */
public record OutputRules(TokenConstraint constraint, int gateToken, boolean keepSpecialTokens) {
    /** Free text, special tokens skipped. */
    public static final OutputRules NONE = new OutputRules(null, -1, false);
}
