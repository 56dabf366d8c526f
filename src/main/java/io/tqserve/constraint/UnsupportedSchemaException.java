package io.tqserve.constraint;

/**
 * A schema uses a keyword (or a keyword's value) that constrained decoding cannot guarantee, or needs more than
 * its budget ({@link ConstraintBudgetException}).
 */
public class UnsupportedSchemaException extends RuntimeException {
    private final String keyword;

    public UnsupportedSchemaException(String keyword, String message) {
        super(message);
        this.keyword = keyword;
    }

    /** The offending keyword, e.g. {@code pattern}. */
    public String keyword() {
        return keyword;
    }
}
