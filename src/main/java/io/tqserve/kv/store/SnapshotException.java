package io.tqserve.kv.store;

/** A KV snapshot that cannot be loaded, and exactly why. Nothing is half-loaded when this is thrown. */
public final class SnapshotException extends Exception {

    /** The closed set of refusals. */
    public enum Reason {
        /** Not a tqserve KV snapshot (bad magic). */
        NOT_A_SNAPSHOT,
        /** A format version this build does not read. */
        UNSUPPORTED_VERSION,
        /** The file ends before its declared payload. */
        TRUNCATED,
        /** A section's CRC32C does not match: the bytes were changed. */
        CHECKSUM,
        /** Written by another KV scheme or shape than the cache it is loaded into. */
        WRONG_SCHEME,
        /** Written for other model weights or config. */
        WRONG_MODEL,
        /** Written with another tokenizer. */
        WRONG_TOKENIZER,
        /** The file could not be read or written. */
        IO
    }

    private final Reason reason;

    public SnapshotException(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    public SnapshotException(Reason reason, String message, Throwable cause) {
        super(message, cause);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
