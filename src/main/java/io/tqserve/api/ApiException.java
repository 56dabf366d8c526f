package io.tqserve.api;

import java.time.Duration;
import org.springframework.http.HttpStatus;

/** An error answered with an OpenAI error body; {@link OpenAiErrorHandler} writes it. */
public final class ApiException extends RuntimeException {
    private final HttpStatus status;
    private final String type;
    private final String param;
    private final String code;
    private final Duration retryAfter;

    public ApiException(HttpStatus status, String type, String param, String code, String message,
            Duration retryAfter) {
        super(message);
        this.status = status;
        this.type = type;
        this.param = param;
        this.code = code;
        this.retryAfter = retryAfter;
    }

    /** 400 invalid_request_error naming the offending field. */
    public static ApiException invalid(String param, String message) {
        return new ApiException(HttpStatus.BAD_REQUEST, "invalid_request_error", param, null, message, null);
    }

    /** 400 invalid_request_error with a code. */
    public static ApiException invalid(String param, String code, String message) {
        return new ApiException(HttpStatus.BAD_REQUEST, "invalid_request_error", param, code, message, null);
    }

    public HttpStatus status() {
        return status;
    }

    public String type() {
        return type;
    }

    public String param() {
        return param;
    }

    public String code() {
        return code;
    }

    /** Retry-After to send, or null. */
    public Duration retryAfter() {
        return retryAfter;
    }
}
