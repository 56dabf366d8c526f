package io.tqserve.api;

import java.time.Duration;
import java.util.List;

/**
 * The API's settings (from {@code tqserve.api.*}).
 *
 * @param keys              API keys; non-empty = Bearer auth on /v1/*, /tokenize and /detokenize
 * @param strictModelId     reject a "model" other than the served id
 * @param defaultMaxTokens  chat max_tokens when a request gives none (capped by the context left)
 * @param keepAliveInterval SSE keep-alive comment interval while a stream has nothing to send
 * @param retryAfter        Retry-After of 429 and 503 answers
 */
public record ApiSettings(List<String> keys, boolean strictModelId, int defaultMaxTokens, Duration keepAliveInterval,
        Duration retryAfter) {
    public ApiSettings {
        keys = List.copyOf(keys);
    }
}
