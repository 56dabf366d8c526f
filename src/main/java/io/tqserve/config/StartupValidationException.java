package io.tqserve.config;

/** The configuration cannot be served; the message names the setting to change. */
public final class StartupValidationException extends RuntimeException {
    public StartupValidationException(String message) {
        super(message);
    }

    public StartupValidationException(String message, Throwable cause) {
        super(message, cause);
    }
}
