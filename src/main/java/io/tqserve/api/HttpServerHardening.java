package io.tqserve.api;

import java.time.Duration;
import org.springframework.boot.reactor.netty.NettyServerCustomizer;
import org.springframework.stereotype.Component;
import reactor.netty.NettyPipeline;
import reactor.netty.http.server.HttpServer;

/**
 * The HTTP/1.1 connection rules of the server, applied to Reactor Netty's {@link HttpServer}: the idle timeout of
 * keep-alive connections and the body timeout are Reactor Netty's own ({@link HttpServer#idleTimeout},
 * {@link HttpServer#requestTimeout}: the latter runs from the end of a request's headers to the end of its body);
 * Reactor Netty has no deadline for the headers themselves (its idle timer restarts with every byte, so a client
 * sending one byte a second holds a connection forever), so {@link HeadTimeout} adds one; {@link RequestFraming}
 * (after the decoder) and {@link RawRequestScanner} (before it: folded headers, chunk sizes) refuse what Netty's
 * decoder accepts but RFC 9112 does not. Neither timeout runs while a response is written, so
 * an SSE stream with its keep-alive comments is never cut. A client that half-closes its connection (shuts down its
 * sending side) has it closed: Netty's default, kept on purpose — with {@code ALLOW_HALF_CLOSURE} Reactor Netty
 * 1.3.6 logs errors from the closed socket when the client then goes away.
 */
@Component
public final class HttpServerHardening implements NettyServerCustomizer {
    static final String HEAD_TIMEOUT = "tqserve.headTimeout";
    static final String SCANNER = "tqserve.rawRequestScanner";
    static final String FRAMING = "tqserve.requestFraming";

    private final HttpSettings settings;

    public HttpServerHardening(HttpSettings settings) {
        this.settings = settings;
    }

    @Override
    public HttpServer apply(HttpServer server) {
        HttpServer s = server;
        if (positive(settings.idleTimeout())) {
            s = s.idleTimeout(settings.idleTimeout());
        }
        if (positive(settings.bodyTimeout())) {
            s = s.requestTimeout(settings.bodyTimeout());
        }
        Duration head = settings.headerTimeout();
        return s.doOnChannelInit((observer, channel, address) -> {
            if (channel.pipeline().get(NettyPipeline.HttpCodec) == null) {
                return; // not an HTTP/1.1 pipeline
            }
            HeadTimeout timeout = new HeadTimeout(positive(head) ? head : null);
            RawRequestScanner scanner = new RawRequestScanner(timeout);
            channel.pipeline().addFirst(HEAD_TIMEOUT, timeout);
            channel.pipeline().addAfter(HEAD_TIMEOUT, SCANNER, scanner);
            channel.pipeline().addAfter(NettyPipeline.HttpCodec, FRAMING, new RequestFraming(timeout, scanner));
        });
    }

    private static boolean positive(Duration d) {
        return d != null && !d.isZero() && !d.isNegative();
    }
}
