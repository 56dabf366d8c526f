package io.tqserve.api;

import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.HttpHeaders;
import org.springframework.stereotype.Component;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * Reads the (empty) body of a request that has none — GET, HEAD, OPTIONS, a bodyless DELETE — before anything
 * answers it. Reactor Netty 1.3.6 (Spring Boot 4.0.7's) can leave the next request on a keep-alive connection
 * unanswered when an answer completes before the request was read to its end, and nothing else reads the body
 * of a GET: over loopback about 1 request in 100 that followed a GET (health probes, /v1/models, metrics) hung
 * until the client gave up (reactor/reactor-netty issues 4188 and 4361 describe the race). Requests with a body
 * are read by their handler, or drained by {@link OpenAiErrorHandler} when refused before that. Runs first.
 */
@Component
@Order(Ordered.HIGHEST_PRECEDENCE)
public final class KeepAliveFilter implements WebFilter {

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        HttpHeaders h = exchange.getRequest().getHeaders();
        if (h.getContentLength() <= 0 && !h.containsHeader(HttpHeaders.TRANSFER_ENCODING)) {
            return exchange.getRequest().getBody().then(Mono.defer(() -> chain.filter(exchange)));
        }
        return chain.filter(exchange);
    }
}
