package io.tqserve.constraint;

/** A schema (or a step of its decoding) needs more than its {@link ConstraintLimits} allow. */
public final class ConstraintBudgetException extends UnsupportedSchemaException {
    public ConstraintBudgetException(String keyword, String message) {
        super(keyword, "the schema exceeds a constrained-decoding budget at '" + keyword + "': " + message);
    }
}
