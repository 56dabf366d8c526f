package io.tqserve.api;

import java.time.Duration;
import java.util.List;

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
 */
public record ApiSettings(List<String> keys, boolean strictModelId, int defaultMaxTokens, Duration keepAliveInterval,
        Duration retryAfter, Duration requestTimeout, Duration shutdownGracePeriod, boolean logPrompts,
        int maxMessages, int maxPromptChars, List<String> openActuator, List<String> corsAllowedOrigins) {
    /** TqserveProperties.Api defaults for the settings the short constructor does not take (tests). */
    public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofMinutes(10);

    public ApiSettings {
        keys = List.copyOf(keys);
        openActuator = List.copyOf(openActuator);
        corsAllowedOrigins = List.copyOf(corsAllowedOrigins);
    }

    /** The settings of the original five keys, the rest at their defaults. */
    public ApiSettings(List<String> keys, boolean strictModelId, int defaultMaxTokens, Duration keepAliveInterval,
            Duration retryAfter) {
        this(keys, strictModelId, defaultMaxTokens, keepAliveInterval, retryAfter, DEFAULT_REQUEST_TIMEOUT,
                Duration.ofSeconds(15), false, 1000, 1_000_000, List.of("health"), List.of());
    }
}
