package io.tqserve.api;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The first handler of a connection: a deadline for the head of each request, from its first byte to the end of
 * its headers (told by {@link RequestFraming} when Netty's decoder produced the request). Past it the connection
 * is answered 408 (when no response is being written on it) and closed. Not Reactor Netty's idle timeout: that one
 * restarts with every byte read.
 */
final class HeadTimeout extends ChannelDuplexHandler {
    private static final Logger log = LoggerFactory.getLogger(HeadTimeout.class);

    private final Duration timeout;
    private ChannelHandlerContext ctx;
    private ScheduledFuture<?> timer;
    /** Bytes read now belong to the head of a request (none is being read). */
    private boolean awaitingHead = true;
    /** A response is being written. */
    private boolean responding;

    HeadTimeout(Duration timeout) {
        this.timeout = timeout;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (timeout != null && awaitingHead && timer == null && msg instanceof ByteBuf b && b.isReadable()) {
            timer = ctx.executor().schedule(this::expired, timeout.toMillis(), TimeUnit.MILLISECONDS);
        }
        ctx.fireChannelRead(msg);
    }

    /** The head of a request was decoded: its body (if any) follows. */
    void headDecoded() {
        cancel();
        awaitingHead = false;
    }

    /** The whole request was read: the next byte starts another head. */
    void requestRead() {
        awaitingHead = true;
    }

    void responding(boolean on) {
        responding = on;
    }

    /** A request refused before the decoder saw it: 400 and close (only close while a response is written). */
    void refused(ChannelHandlerContext any, String why) {
        cancel();
        log.debug("refused a request from {}: {}", any.channel().remoteAddress(), why);
        if (responding) {
            any.close();
        } else {
            RequestFraming.reject(ctx, 400, "invalid_request_error", "invalid_framing", why);
        }
    }

    private void expired() {
        timer = null;
        if (!ctx.channel().isActive()) {
            return;
        }
        log.debug("closing {}: request headers not complete within {}", ctx.channel().remoteAddress(), timeout);
        if (responding) {
            ctx.close();
        } else {
            RequestFraming.reject(ctx, 408, "timeout", "request_timeout",
                    "the request headers did not arrive within " + timeout.toMillis() + " ms");
        }
    }

    private void cancel() {
        if (timer != null) {
            timer.cancel(false);
            timer = null;
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        cancel();
        ctx.fireChannelInactive();
    }
}
