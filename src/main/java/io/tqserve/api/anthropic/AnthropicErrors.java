package io.tqserve.api.anthropic;

import io.tqserve.api.ApiException;
import io.tqserve.api.openai.Wire;
import tools.jackson.databind.node.ObjectNode;

/**
 * Errors of the {@code /v1/messages} paths in Anthropic's shape, {@code {"type": "error", "error": {"type",
 * "message"}}}, with Anthropic's error types for the status: 400 invalid_request_error, 401 authentication_error,
 * 403 permission_error, 404 not_found_error, 413 request_too_large, 429 rate_limit_error, 500 api_error, and
 * overloaded_error with Anthropic's 529 for what tqserve answers 503 (the queue full with
 * {@code tqserve.api.queue-full-status=503}, loading, shutting down). Other 4xx are invalid_request_error.
 */
public final class AnthropicErrors {
    /** Anthropic's status for an overloaded service. */
    public static final int OVERLOADED = 529;

    private AnthropicErrors() {
    }

    /** True for the paths answered in Anthropic's shape. */
    public static boolean serves(String path) {
        return path.equals("/v1/messages") || path.startsWith("/v1/messages/");
    }

    /** The status Anthropic sends for this error. */
    public static int status(ApiException e) {
        return e.status().value() == 503 ? OVERLOADED : e.status().value();
    }

    /** Anthropic's error type for a status. */
    public static String type(int status) {
        return switch (status) {
            case 401 -> "authentication_error";
            case 403 -> "permission_error";
            case 404 -> "not_found_error";
            case 413 -> "request_too_large";
            case 429 -> "rate_limit_error";
            case 503, OVERLOADED -> "overloaded_error";
            default -> status >= 500 ? "api_error" : "invalid_request_error";
        };
    }

    /** The error object ({@code {"type": "error", "error": {...}}}). */
    public static ObjectNode node(ApiException e) {
        ObjectNode root = Wire.MAPPER.createObjectNode();
        root.put("type", "error");
        ObjectNode error = root.putObject("error");
        int status = e.status().value();
        // a stream that failed after it started is answered in-band: a timeout there is Anthropic's api_error
        error.put("type", type(status == 504 || status == 408 ? 500 : status));
        error.put("message", e.getMessage());
        return root;
    }

    /** The body of an error answer. */
    public static String body(ApiException e) {
        return Wire.json(node(e));
    }
}
