package io.tqserve.api;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.stereotype.Component;
import org.springframework.web.cors.CorsConfiguration;
import org.springframework.web.cors.reactive.CorsWebFilter;
import org.springframework.web.cors.reactive.UrlBasedCorsConfigurationSource;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * Cross-origin access for browsers, off unless {@code tqserve.api.cors.allowed-origins} names origins. Runs
 * before the API key filter, so a preflight ({@code OPTIONS} with {@code Access-Control-Request-Method}, which
 * browsers send without credentials) is answered here; the actual request then needs its key as usual. Spring's
 * {@link CorsWebFilter} does the work; this only configures it: GET and POST, any request header (Spring echoes
 * the requested ones, so {@code Authorization} is allowed explicitly, as the Fetch spec requires), the routing
 * headers and {@code Retry-After} exposed, no cookies. A request from another origin is a 403 with an OpenAI
 * error body.
 */
@Component
@Order(Ordered.HIGHEST_PRECEDENCE + 1) // right after AsyncDispatchFilter, before the API key filter
public final class CorsFilter implements WebFilter {
    static final List<String> EXPOSED = List.of(GenerationHandler.LANE_HEADER, GenerationHandler.REASON_HEADER,
            HttpHeaders.RETRY_AFTER);

    private final CorsWebFilter delegate;

    public CorsFilter(ApiSettings settings) {
        if (settings.corsAllowedOrigins().isEmpty()) {
            delegate = null;
            return;
        }
        CorsConfiguration c = new CorsConfiguration();
        c.setAllowedOrigins(settings.corsAllowedOrigins());
        c.setAllowedMethods(List.of("GET", "POST"));
        c.setAllowedHeaders(List.of(CorsConfiguration.ALL));
        c.setExposedHeaders(EXPOSED);
        c.setAllowCredentials(false);
        c.setMaxAge(Duration.ofHours(1));
        UrlBasedCorsConfigurationSource source = new UrlBasedCorsConfigurationSource();
        source.registerCorsConfiguration("/**", c);
        delegate = new CorsWebFilter(source);
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        if (delegate == null) {
            return chain.filter(exchange);
        }
        AtomicBoolean passed = new AtomicBoolean();
        return delegate.filter(exchange, ex -> {
            passed.set(true);
            return chain.filter(ex);
        }).then(Mono.defer(() -> !passed.get() && exchange.getResponse().getStatusCode() == HttpStatus.FORBIDDEN
                ? Mono.error(new ApiException(HttpStatus.FORBIDDEN, "invalid_request_error", null, "cors_rejected",
                        "cross-origin request rejected: origin, method or headers not allowed "
                                + "(tqserve.api.cors.allowed-origins)", null))
                : Mono.empty()));
    }
}
