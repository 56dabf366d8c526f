package io.tqserve.api;

import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.HttpStatus;
import org.springframework.security.web.server.firewall.ServerExchangeRejectedException;
import org.springframework.security.web.server.firewall.StrictServerWebExchangeFirewall;
import org.springframework.stereotype.Component;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * Refuses request targets that no tqserve path needs and that path matchers decode in surprising ways, before
 * anything else looks at them: an encoded slash, backslash, period or percent ({@code /actuator/health/x%2fy},
 * {@code ..%2fprometheus}), {@code //}, {@code ../}, a NUL or line break, a semicolon, an unknown method. Spring
 * Security's {@link StrictServerWebExchangeFirewall} does the checking (only the firewall is used, not Spring
 * Security's filter chain); a refusal is a 400 {@code request_rejected}. Then the {@code Host} is checked against
 * {@code tqserve.api.allowed-hosts} (when it is not empty): another host is a 400 {@code invalid_host}, which
 * stops a DNS-rebinding page in a browser from reaching a server that has no API keys.
 */
@Component
@Order(Ordered.HIGHEST_PRECEDENCE + 5) // after CORS, before the API key filter
public final class RequestFirewall implements WebFilter {
    private final StrictServerWebExchangeFirewall firewall = new StrictServerWebExchangeFirewall();
    private final Set<String> allowedHosts;

    public RequestFirewall(HttpSettings settings) {
        this.allowedHosts = normalized(settings.allowedHosts());
    }

    static Set<String> normalized(List<String> hosts) {
        return hosts.stream().map(h -> stripBrackets(h.trim().toLowerCase(Locale.ROOT))).filter(h -> !h.isEmpty())
                .collect(Collectors.toUnmodifiableSet());
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        // the checked exchange is only used for its verdict: the chain gets the original request
        return firewall.getFirewalledExchange(exchange)
                .onErrorMap(ServerExchangeRejectedException.class, e -> new ApiException(HttpStatus.BAD_REQUEST,
                        "invalid_request_error", null, "request_rejected",
                        "the request target is not accepted (an encoded slash, backslash, period or percent sign, "
                                + "'//', '../', ';', a control character or an unknown method)", null))
                .then(Mono.defer(() -> {
                    if (!allowedHosts.isEmpty()) {
                        String host = exchange.getRequest().getURI().getHost();
                        if (host == null || !allowedHosts.contains(stripBrackets(host.toLowerCase(Locale.ROOT)))) {
                            return Mono.error(new ApiException(HttpStatus.BAD_REQUEST, "invalid_request_error", null,
                                    "invalid_host", "the Host header names a host this server does not answer for "
                                            + "(tqserve.api.allowed-hosts)", null));
                        }
                    }
                    return chain.filter(exchange);
                }));
    }

    private static String stripBrackets(String host) {
        return host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
    }
}
