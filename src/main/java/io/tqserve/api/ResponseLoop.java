package io.tqserve.api;

import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.http.server.reactive.ServerHttpResponseDecorator;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.netty.Connection;

/**
 * The thread a streamed response runs on: the Netty event loop of its connection, as a {@link Scheduler}. Every
 * signal of a stream's frame pipeline — the lane's events (published onto it), keep-alive ticks, the request
 * deadline and the shutdown cut, the subscription, and the write demand of Reactor Netty, which always comes from
 * that loop — then reaches the operators on one thread.
 *
 * <p>Why: with the lane's thread pushing events down the pipeline while the event loop sent write demand up it,
 * a stream could stall for good. Reactor Netty's {@code sendGroups} (Spring's {@code writeAndFlushWith}) wraps each
 * frame in {@code Flux.from(frame).concatWith(BOUNDARY)}; Reactor 3.8's {@code FluxConcatArray} switches from one
 * source to the next without a lock, and a request that races the switch can go to the finished source. A heap dump
 * of a stalled stream showed exactly that: the inner concat on its flush marker, holding 120 requested but never
 * having asked the marker for it, the frames behind it queued in {@code concatMap} and, back-pressured, in the
 * lane's sink, while the lane had finished the sequence. Neither the client nor the lane could end it; only the
 * connection closing did. On one thread the switch and the demand cannot interleave.
 *
 * <p>Cost: the one hand-off per token that writing needs anyway (Reactor Netty runs every write on the event loop),
 * now before the encoding instead of after it.
 */
final class ResponseLoop {
    private ResponseLoop() {
    }

    /**
     * The event loop of the connection that writes {@code response}; for a response without a Reactor Netty
     * connection (a mock exchange in tests), Reactor's shared single thread. Never disposed: the executor is
     * Netty's.
     */
    static Scheduler of(ServerHttpResponse response) {
        Object nativeResponse;
        try {
            nativeResponse = ServerHttpResponseDecorator.getNativeResponse(response);
        } catch (IllegalStateException | IllegalArgumentException e) {
            nativeResponse = null; // a mock response has no native one
        }
        if (nativeResponse instanceof Connection c) {
            return Schedulers.fromExecutorService(c.channel().eventLoop(), "tqserve-response-loop");
        }
        return Schedulers.single();
    }
}
