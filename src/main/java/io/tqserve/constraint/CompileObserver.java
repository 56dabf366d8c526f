package io.tqserve.constraint;

/**
 * What the server's constraint compiles do, for metrics: how each compile ended and how long it ran, how cache
 * lookups were answered, and what the compiled-constraint cache holds. Called from compile threads and request
 * threads; implementations must be thread-safe and cheap.
 */
public interface CompileObserver {
    /** How one compile ended. */
    enum Outcome {
        /** compiled */
        COMPILED("compiled"),
        /** refused: the schema uses what is not supported or exceeds a compile budget (a 400) */
        REFUSED("refused"),
        /** ended at the compile time budget (a 400) */
        TIMEOUT("timeout"),
        /** every request waiting for it went away (client gone, request deadline) */
        CANCELLED("cancelled"),
        /** not started: the compile queue was full (a 429 or 503) */
        REJECTED("rejected"),
        /** failed otherwise */
        FAILED("failed");

        private final String wireName;

        Outcome(String wireName) {
            this.wireName = wireName;
        }

        public String wireName() {
            return wireName;
        }
    }

    /** How a request found its constraint. */
    enum Lookup {
        /** in the cache */
        HIT("hit"),
        /** joined a compile another request had started */
        SHARED("shared"),
        /** started a compile */
        MISS("miss");

        private final String wireName;

        Lookup(String wireName) {
            this.wireName = wireName;
        }

        public String wireName() {
            return wireName;
        }
    }

    CompileObserver NONE = new CompileObserver() {
    };

    /** A request looked its constraint up. */
    default void lookup(Lookup lookup) {
    }

    /** A compile began running on a compile thread. */
    default void started() {
    }

    /**
     * A compile ended; {@code nanos} is the time it ran on its compile thread, or -1 when it never started.
     * Exactly one call per compile submitted, including rejected ones.
     */
    default void ended(Outcome outcome, long nanos) {
    }

    /** The compiled-constraint cache now holds this many bytes in this many entries. */
    default void cache(long bytes, int entries) {
    }
}
