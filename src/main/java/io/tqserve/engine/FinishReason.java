package io.tqserve.engine;

import java.util.Locale;

/** Why a sequence ended. The wire names are the lower-case constants. */
public enum FinishReason {
    /** An end-of-sequence token or a stop string. */
    STOP,
    /** max_tokens or the model context reached. */
    LENGTH,
    /** The client went away or the request timed out. */
    CANCELLED,
    /** The sequence failed. */
    ERROR;

    public String wireName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
