package io.tqserve.api;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.List;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.stereotype.Component;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * Bearer auth on /v1/*, /tokenize and /detokenize when {@code tqserve.api.keys} is not empty; health, info,
 * metrics and prometheus stay open. Keys are compared in constant time. A missing or wrong key is a 401 with an
 * OpenAI error body.
 */
@Component
public final class ApiKeyFilter implements WebFilter {
    private final List<byte[]> keys;

    public ApiKeyFilter(ApiSettings settings) {
        this.keys = settings.keys().stream().map(k -> k.getBytes(StandardCharsets.UTF_8)).toList();
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        if (keys.isEmpty() || !protectedPath(exchange.getRequest().getPath().pathWithinApplication().value())) {
            return chain.filter(exchange);
        }
        String auth = exchange.getRequest().getHeaders().getFirst(HttpHeaders.AUTHORIZATION);
        if (auth == null || !auth.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return Mono.error(unauthorized("missing API key: send Authorization: Bearer <key>"));
        }
        byte[] given = auth.substring(7).trim().getBytes(StandardCharsets.UTF_8);
        boolean ok = false;
        for (byte[] k : keys) {
            ok |= MessageDigest.isEqual(k, given); // constant time per key; every key is compared
        }
        return ok ? chain.filter(exchange) : Mono.error(unauthorized("invalid API key"));
    }

    static boolean protectedPath(String path) {
        return path.startsWith("/v1/") || path.equals("/v1") || path.equals("/tokenize")
                || path.equals("/detokenize");
    }

    private static ApiException unauthorized(String message) {
        return new ApiException(HttpStatus.UNAUTHORIZED, "invalid_request_error", null, "invalid_api_key", message,
                null);
    }
}
