package io.tqserve.api;

import java.time.Duration;
import java.util.List;

/**
 * The HTTP connection settings (from {@code tqserve.api.*}).
 *
 * @param allowedHosts  host names the {@code Host} header may name; empty = any
 * @param headerTimeout most time from the first byte of a request to the end of its headers (then 408 and close)
 * @param bodyTimeout   most time to read a request body once its headers arrived (then the connection is closed)
 * @param idleTimeout   a keep-alive connection with no request in progress is closed after this long
 */
public record HttpSettings(List<String> allowedHosts, Duration headerTimeout, Duration bodyTimeout,
        Duration idleTimeout) {
    public HttpSettings {
        allowedHosts = List.copyOf(allowedHosts);
    }

    /** The defaults of application.yml. */
    public static HttpSettings defaults() {
        return new HttpSettings(List.of(), Duration.ofSeconds(20), Duration.ofSeconds(60), Duration.ofSeconds(60));
    }
}
