package io.tqserve.api;

import java.time.Duration;
import java.util.List;
import org.springframework.http.HttpStatus;

/**
 * The API's settings (from {@code tqserve.api.*}).
 *
 * @param keys                API keys; non-empty = Bearer auth on everything but the open actuator endpoints
 * @param strictModelId       reject a "model" other than the served id
 * @param defaultMaxTokens    chat max_tokens when a request gives none (capped by the context left)
 * @param keepAliveInterval   SSE keep-alive comment interval while a stream has nothing to send
 * @param retryAfter          Retry-After of 429 and 503 answers
 * @param requestTimeout      a generation request still running this long after it arrived is ended (0 = never)
 * @param shutdownGracePeriod at shutdown, how long running requests may finish before they are ended
 * @param logPrompts          log the prompt text of each request
 * @param maxMessages         most chat messages per request
 * @param maxPromptChars      most prompt characters per request (all messages together)
 * @param openActuator        actuator endpoint ids that stay open when keys are set
 * @param corsAllowedOrigins  origins allowed to call the API from a browser; empty = CORS off
 * @param queueFullStatus     status of a request refused because its lane's queue is full (429 or 503)
 * @param specialTokensInContent special-token text in messages and tools becomes special tokens (trusted clients
 *                            only: it lets a message forge turns); off: it is tokenized as ordinary text
 */
public record ApiSettings(List<String> keys, boolean strictModelId, int defaultMaxTokens, Duration keepAliveInterval,
        Duration retryAfter, Duration requestTimeout, Duration shutdownGracePeriod, boolean logPrompts,
        int maxMessages, int maxPromptChars, List<String> openActuator, List<String> corsAllowedOrigins,
        int queueFullStatus, boolean specialTokensInContent) {
    /** TqserveProperties.Api defaults for the settings the short constructor does not take (tests). */
    public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofMinutes(10);

    public ApiSettings {
        keys = List.copyOf(keys);
        openActuator = List.copyOf(openActuator);
        corsAllowedOrigins = List.copyOf(corsAllowedOrigins);
    }

    /** All settings but the queue-full status, which is 429. */
    public ApiSettings(List<String> keys, boolean strictModelId, int defaultMaxTokens, Duration keepAliveInterval,
            Duration retryAfter, Duration requestTimeout, Duration shutdownGracePeriod, boolean logPrompts,
            int maxMessages, int maxPromptChars, List<String> openActuator, List<String> corsAllowedOrigins) {
        this(keys, strictModelId, defaultMaxTokens, keepAliveInterval, retryAfter, requestTimeout, shutdownGracePeriod,
                logPrompts, maxMessages, maxPromptChars, openActuator, corsAllowedOrigins, 429, false);
    }

    /** The status, Retry-After and body of a request refused because its lane's queue is full. */
    public ApiException queueFull(String message) {
        return queueFullStatus == 503
                ? new ApiException(HttpStatus.SERVICE_UNAVAILABLE, "service_unavailable", null, "queue_full",
                        message + "; retry later", retryAfter)
                : new ApiException(HttpStatus.TOO_MANY_REQUESTS, "rate_limit_error", null, "queue_full",
                        message + "; retry later", retryAfter);
    }

    /** The settings of the original five keys, the rest at their defaults. */
    public ApiSettings(List<String> keys, boolean strictModelId, int defaultMaxTokens, Duration keepAliveInterval,
            Duration retryAfter) {
        this(keys, strictModelId, defaultMaxTokens, keepAliveInterval, retryAfter, DEFAULT_REQUEST_TIMEOUT,
                Duration.ofSeconds(15), false, 1000, 1_000_000, List.of("health"), List.of());
    }
}
