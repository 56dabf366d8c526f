package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link RawRequestScanner} and {@link RequestFraming} in front of and behind Netty's own codec, on an embedded
 * channel: pipelined requests with fixed-length and chunked bodies decode exactly as without the scanner, whether
 * they arrive in one buffer or one byte at a time; a folded header line is a 400 before the decoder sees the
 * request; a chunk size with leading white space fails in the decoder like any undecodable chunk.
 */
class RawRequestScannerTest {
    static final String PIPELINED = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
            + "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello\r\n\r\n:)"
            + "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;ext=1\r\nwor\nd\r\nA \r\n0123456789\r\n0\r\nTrailer: t\r\n\r\n"
            + "\r\nGET /d HTTP/1.1\r\nHost: x\r\n\r\n";

    /** What reached the application: "REQ uri", body text per request, "FAIL" for a decoder failure. */
    static final class Seen extends ChannelInboundHandlerAdapter {
        final List<String> events = new ArrayList<>();
        StringBuilder body = new StringBuilder();

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof HttpRequest r) {
                events.add(r.decoderResult().isFailure() ? "FAIL" : "REQ " + r.uri());
            }
            if (msg instanceof HttpContent c) {
                if (c.decoderResult().isFailure()) {
                    events.add("FAIL");
                }
                body.append(c.content().toString(StandardCharsets.ISO_8859_1));
                if (msg instanceof LastHttpContent) {
                    events.add("BODY " + body);
                    body = new StringBuilder();
                }
            }
            ReferenceCountUtil.release(msg);
        }
    }

    static EmbeddedChannel channel(Seen seen, boolean withScanner) {
        EmbeddedChannel ch = new EmbeddedChannel();
        HeadTimeout head = new HeadTimeout(null);
        RawRequestScanner scanner = new RawRequestScanner(head);
        ch.pipeline().addLast(HttpServerHardening.HEAD_TIMEOUT, head);
        if (withScanner) {
            ch.pipeline().addLast(HttpServerHardening.SCANNER, scanner);
        }
        ch.pipeline().addLast("codec", new HttpServerCodec());
        ch.pipeline().addLast(HttpServerHardening.FRAMING, new RequestFraming(head, scanner));
        ch.pipeline().addLast(seen);
        return ch;
    }

    static List<String> decode(String bytes, boolean withScanner, int piece) {
        Seen seen = new Seen();
        EmbeddedChannel ch = channel(seen, withScanner);
        byte[] all = bytes.getBytes(StandardCharsets.ISO_8859_1);
        for (int i = 0; i < all.length; i += piece) {
            ch.writeInbound(Unpooled.wrappedBuffer(all, i, Math.min(piece, all.length - i)));
        }
        ch.finishAndReleaseAll();
        return seen.events;
    }

    static String written(EmbeddedChannel ch) {
        StringBuilder out = new StringBuilder();
        Object o;
        while ((o = ch.readOutbound()) != null) {
            out.append(((ByteBuf) o).toString(StandardCharsets.ISO_8859_1));
            ReferenceCountUtil.release(o);
        }
        return out.toString();
    }

    @Test
    void pipelinedRequestsDecodeAsWithoutTheScannerInAnyPieces() {
        List<String> reference = decode(PIPELINED, false, PIPELINED.length());
        assertThat(reference).containsExactly("REQ /a", "BODY ", "REQ /b", "BODY hello\r\n\r\n:)", "REQ /c",
                "BODY wor\nd0123456789", "REQ /d", "BODY ");
        for (int piece : new int[] {PIPELINED.length(), 1, 2, 3, 7, 16}) {
            assertThat(decode(PIPELINED, true, piece)).as("pieces of " + piece).isEqualTo(reference);
        }
    }

    @Test
    void aFoldedHeaderLineIsA400BeforeTheDecoderSeesTheRequest() {
        for (String fold : List.of("X-A: a\r\n b\r\n", "X-A: a\r\n\tb\r\n", "Host2: y\r\n  \r\n")) {
            Seen seen = new Seen();
            EmbeddedChannel ch = channel(seen, true);
            ch.writeInbound(Unpooled.copiedBuffer("GET /a HTTP/1.1\r\nHost: x\r\n" + fold + "\r\n",
                    StandardCharsets.ISO_8859_1));
            assertThat(seen.events).as(fold).isEmpty();
            assertThat(written(ch)).startsWith("HTTP/1.1 400 Bad Request\r\n").contains("Connection: close")
                    .contains("\"code\":\"invalid_framing\"");
            assertThat(ch.isOpen()).isFalse();
        }
    }

    @Test
    void aChunkSizeThatIsNotPlainHexFailsInTheDecoder() {
        for (String size : List.of(" e", "\te", "+e", "e x", "", "0x5", "1234567890abcdef0")) {
            String req = "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n" + size
                    + "\r\n0123456789abcd\r\n0\r\n\r\n";
            for (int piece : new int[] {req.length(), 1, 5}) {
                List<String> events = decode(req, true, piece);
                assertThat(events).as("'" + size + "' in pieces of " + piece).startsWith("REQ /c").contains("FAIL");
            }
        }
        // sizes RFC 9112 allows: upper and lower case, extensions with white space before the ';'
        String ok = "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "A \t;name=value\r\n0123456789\r\nb;x\r\n0123456789a\r\n0\r\n\r\n";
        assertThat(decode(ok, true, 3)).containsExactly("REQ /c", "BODY 01234567890123456789a");
    }
}
