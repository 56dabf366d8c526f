package io.tqserve.constraint;

/** A schema uses a keyword (or a keyword's value) that constrained decoding cannot guarantee. */
public final class UnsupportedSchemaException extends RuntimeException {
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
