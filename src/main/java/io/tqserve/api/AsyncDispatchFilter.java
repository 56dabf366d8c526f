package io.tqserve.api;

import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.stereotype.Component;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * Handles every request off the Netty event loop that read it. Works around a Reactor Netty 1.3.6 bug
 * (reactor/reactor-netty#4361, fixed by #4347): when a keep-alive request arrives before the previous response's
 * operations terminated it is buffered, and if that buffered request is then answered synchronously on the event
 * loop the connection never reads again — the client's next request hangs without a response. tqserve answers
 * health checks, 404s and small JSON bodies synchronously, and clients that pool connections (the OpenAI SDKs)
 * hit it; {@code KeepAliveConnectionTest} reproduces it. Remove once Spring Boot manages a Reactor Netty release
 * with the fix.
 */
@Component
@Order(Ordered.HIGHEST_PRECEDENCE)
public final class AsyncDispatchFilter implements WebFilter {
    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        return chain.filter(exchange).subscribeOn(Schedulers.parallel());
    }
}
