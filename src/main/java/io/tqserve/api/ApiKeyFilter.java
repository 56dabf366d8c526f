package io.tqserve.api;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;
import java.util.Set;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.stereotype.Component;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * Bearer auth when {@code tqserve.api.keys} is not empty (or the key in {@code x-api-key}, as Anthropic's clients
 * send it). Deny by default: every path needs the key — /v1/**,
 * /tokenize, /detokenize, the snapshot API, unknown paths and the actuator — except the actuator endpoints named
 * in {@code tqserve.api.open-actuator} (health by default, with its /liveness and /readiness groups). A missing
 * or wrong key is a 401 with an OpenAI error body.
 *
 * <p>Constant time: the given key and every configured key are reduced to SHA-256 digests, which are compared
 * with {@link MessageDigest#isEqual} (constant time for equal lengths, and digests always have 32 bytes), and
 * every configured key is compared, so neither the position of the first differing byte nor the length of the
 * key nor which key matched shows in the time taken.
 */
@Component
@Order(Ordered.HIGHEST_PRECEDENCE + 10)
public final class ApiKeyFilter implements WebFilter {
    static final String ACTUATOR = "/actuator";
    /** The header Anthropic's clients send their key in. */
    static final String API_KEY_HEADER = "x-api-key";

    private final List<byte[]> keyDigests;
    private final Set<String> openActuator;

    public ApiKeyFilter(ApiSettings settings) {
        this.keyDigests = settings.keys().stream().map(ApiKeyFilter::sha256).toList();
        this.openActuator = Set.copyOf(settings.openActuator());
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        if (keyDigests.isEmpty() || !protectedPath(exchange.getRequest().getPath().pathWithinApplication().value())) {
            return chain.filter(exchange);
        }
        String auth = exchange.getRequest().getHeaders().getFirst(HttpHeaders.AUTHORIZATION);
        String key;
        if (auth != null && auth.regionMatches(true, 0, "Bearer ", 0, 7)) {
            key = auth.substring(7).trim();
        } else if (exchange.getRequest().getHeaders().getFirst(API_KEY_HEADER) instanceof String k) {
            key = k.trim(); // Anthropic's clients send the key so
        } else {
            return Mono.error(unauthorized("missing API key: send Authorization: Bearer <key>"));
        }
        byte[] digest = sha256(key);
        if (!matches(digest)) {
            return Mono.error(unauthorized("invalid API key"));
        }
        Tenant.set(exchange, digest);
        return chain.filter(exchange);
    }

    /** True when {@code given} is one of the keys; takes the same time whichever key matches, if any. */
    boolean matches(String given) {
        return matches(sha256(given));
    }

    private boolean matches(byte[] digest) {
        boolean ok = false;
        for (byte[] k : keyDigests) {
            ok |= MessageDigest.isEqual(k, digest);
        }
        return ok;
    }

    /** Everything except the open actuator endpoints (and their sub-paths) needs a key. */
    boolean protectedPath(String path) {
        if (!path.startsWith(ACTUATOR + "/")) {
            return true;
        }
        String rest = path.substring(ACTUATOR.length() + 1);
        int slash = rest.indexOf('/');
        String endpoint = slash < 0 ? rest : rest.substring(0, slash);
        return !openActuator.contains(endpoint);
    }

    private static byte[] sha256(String key) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }

    private static ApiException unauthorized(String message) {
        return new ApiException(HttpStatus.UNAUTHORIZED, "invalid_request_error", null, "invalid_api_key", message,
                null);
    }
}
