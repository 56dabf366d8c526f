package io.tqserve.api;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpStatusClass;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import io.tqserve.api.openai.ErrorBody;
import io.tqserve.api.openai.Wire;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sits right after Netty's HTTP codec and refuses requests whose framing RFC 9112 does not allow but Netty's
 * decoder accepts, before Reactor Netty or Spring sees them: a protocol version other than HTTP/1.0 and 1.1 (505;
 * Netty would answer {@code HTTP/9.9 200}), a transfer coding other than {@code chunked} (501, RFC 9112 6.1), a
 * {@code chunked} that is not the last coding or is given twice (400), {@code Transfer-Encoding} in an HTTP/1.0
 * request (400), {@code Transfer-Encoding} beside {@code Content-Length} (400; Netty's own check is kept as
 * well), and an HTTP/1.1 request without exactly one {@code Host} header (400, RFC 9112 3.2). A refused request
 * gets an OpenAI error body with {@code Connection: close} and the connection is closed: whatever follows on it
 * cannot be framed reliably. Refusals are logged at DEBUG only (a client can send any number of them).
 * Requests Netty's decoder failed on are left to Reactor Netty (400 with an empty body, connection closed).
 * Also tells {@link HeadTimeout} where requests and responses begin and end.
 */
final class RequestFraming extends ChannelDuplexHandler {
    private static final Logger log = LoggerFactory.getLogger(RequestFraming.class);

    private final HeadTimeout head;
    private final RawRequestScanner scanner;
    /** A request was refused: everything read after it is dropped until the connection closes. */
    private boolean refused;

    RequestFraming(HeadTimeout head, RawRequestScanner scanner) {
        this.head = head;
        this.scanner = scanner;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (refused) {
            ReferenceCountUtil.release(msg);
            return;
        }
        if (msg instanceof HttpRequest req) {
            head.headDecoded();
            String problem = req.decoderResult().isFailure() ? null : problem(req);
            boolean refusedHere = problem != null || req.decoderResult().isFailure();
            scanner.body(!refusedHere && HttpUtil.isTransferEncodingChunked(req),
                    refusedHere ? 0 : HttpUtil.getContentLength(req, 0L), refusedHere);
            if (problem != null) {
                refused = true;
                ReferenceCountUtil.release(msg);
                int status = Integer.parseInt(problem.substring(0, 3));
                log.debug("refused a request from {}: {}", ctx.channel().remoteAddress(), problem);
                reject(ctx.pipeline().context(HttpServerHardening.HEAD_TIMEOUT), status, "invalid_request_error",
                        status == 505 ? "http_version_not_supported" : status == 501 ? "unsupported_transfer_coding"
                                : "invalid_framing", problem.substring(4));
                return;
            }
        }
        if (msg instanceof LastHttpContent) {
            head.requestRead();
        }
        ctx.fireChannelRead(msg);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (msg instanceof HttpResponse r && r.status().codeClass() != HttpStatusClass.INFORMATIONAL) {
            head.responding(true);
        }
        if (msg instanceof LastHttpContent) {
            head.responding(false);
        }
        ctx.write(msg, promise);
    }

    /** Why the request is refused ("status message"), or null. */
    static String problem(HttpRequest req) {
        HttpVersion v = req.protocolVersion();
        if (v.majorVersion() != 1 || v.minorVersion() > 1) {
            return "505 HTTP version " + v.majorVersion() + "." + v.minorVersion()
                    + " is not supported; send HTTP/1.1";
        }
        HttpHeaders h = req.headers();
        boolean http11 = v.minorVersion() == 1;
        List<String> hosts = h.getAll(HttpHeaderNames.HOST);
        if (hosts.size() > 1 || http11 && hosts.isEmpty()) {
            return "400 an HTTP/1.1 request needs exactly one Host header";
        }
        List<String> te = h.getAll(HttpHeaderNames.TRANSFER_ENCODING);
        if (te.isEmpty()) {
            return null;
        }
        if (!http11) {
            return "400 Transfer-Encoding is not allowed in an HTTP/1.0 request";
        }
        if (h.contains(HttpHeaderNames.CONTENT_LENGTH)) {
            return "400 Transfer-Encoding and Content-Length must not both be sent";
        }
        List<String> codings = new ArrayList<>();
        for (String value : te) {
            for (String c : value.split(",", -1)) {
                codings.add(c.strip().toLowerCase(Locale.ROOT));
            }
        }
        for (String c : codings) {
            if (!c.equals("chunked")) {
                return "501 transfer coding '" + printable(c) + "' is not supported; only chunked is";
            }
        }
        if (codings.size() > 1) {
            return "400 chunked must be the last transfer coding and be given once";
        }
        return null;
    }

    private static String printable(String s) {
        String cut = s.length() > 32 ? s.substring(0, 32) + "..." : s;
        return cut.replaceAll("[^\\x21-\\x7e]", "?");
    }

    /**
     * Writes a complete HTTP/1.1 error response with an OpenAI body straight to the socket from {@code first} (the
     * first handler of the pipeline, so no encoder state is involved) and closes the connection.
     */
    static void reject(ChannelHandlerContext first, int status, String type, String code, String message) {
        byte[] body = Wire.json(ErrorBody.of(message, type, null, code)).getBytes(StandardCharsets.UTF_8);
        String head = "HTTP/1.1 " + status + " " + HttpResponseStatus.valueOf(status).reasonPhrase() + "\r\n"
                + "Content-Type: application/json\r\nContent-Length: " + body.length + "\r\nConnection: close\r\n\r\n";
        first.writeAndFlush(Unpooled.wrappedBuffer(head.getBytes(StandardCharsets.ISO_8859_1), body))
                .addListener(ChannelFutureListener.CLOSE);
    }
}
