package io.tqserve.api;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.nio.charset.StandardCharsets;

/**
 * Looks at the raw bytes of each request before Netty's decoder, for the two things that decoder accepts leniently
 * and no option of it (or of Reactor Netty's {@code HttpRequestDecoderSpec}) refuses: a folded header line (obs-fold,
 * a line of the head starting with a space or tab, which Netty joins to the line before; RFC 9112 5.2 lets a server
 * refuse it, and a proxy may read it differently) and a chunk-size line that does not start with a hex digit
 * ({@code " e"}, which Netty reads as 14). It follows the framing: the head up to its empty line is handed to the
 * decoder alone, so that {@link RequestFraming} has told this scanner the body's length ({@link #body}) before the
 * next byte is looked at; a {@code Content-Length} body is counted, a chunked one is followed chunk by chunk.
 * A folded head gets a 400 (nothing of that request reached the decoder); a bad chunk size is replaced by one the
 * decoder refuses, so the request ends the way every undecodable chunk does (400, connection closed).
 */
final class RawRequestScanner extends ChannelInboundHandlerAdapter {
    /** Longest chunk-size line (with extensions) looked at; longer ones are refused. */
    static final int MAX_CHUNK_LINE = 4096;
    private static final byte[] UNDECODABLE_CHUNK = "z\r\n".getBytes(StandardCharsets.ISO_8859_1);

    private enum State { HEAD, AWAIT_FRAMING, LENGTH, CHUNK_SIZE, CHUNK_DATA, TRAILERS, PASS, DROP }

    private final HeadTimeout head;
    private State state = State.HEAD;
    private boolean lineStart = true;
    private boolean anyLine;
    private int lineLength;
    private long remaining;
    private final StringBuilder chunkLine = new StringBuilder();

    RawRequestScanner(HeadTimeout head) {
        this.head = head;
    }

    /** The head just handed on was decoded; its body is chunked, or {@code length} bytes (0 = none), or refused. */
    void body(boolean chunked, long length, boolean refused) {
        if (state != State.AWAIT_FRAMING) {
            return;
        }
        if (refused) {
            state = State.DROP;
        } else if (chunked) {
            state = State.CHUNK_SIZE;
            chunkLine.setLength(0);
        } else if (length > 0) {
            state = State.LENGTH;
            remaining = length;
        } else {
            startHead();
        }
    }

    private void startHead() {
        state = State.HEAD;
        lineStart = true;
        anyLine = false;
        lineLength = 0;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof ByteBuf buf) || state == State.PASS) {
            ctx.fireChannelRead(msg);
            return;
        }
        try {
            int from = buf.readerIndex(); // start of the bytes not yet handed on
            int end = buf.writerIndex();
            for (int i = from; i < end && state != State.PASS; i++) {
                byte b = buf.getByte(i);
                switch (state) {
                    case HEAD -> {
                        if (lineStart && anyLine && (b == ' ' || b == '\t')) {
                            state = State.DROP;
                            head.refused(ctx, "header folding (a line starting with a space or tab) is not accepted");
                            return;
                        }
                        if (b == '\n') {
                            if (lineLength == 0 && anyLine) { // the empty line: the head is complete
                                state = State.AWAIT_FRAMING;
                                ctx.fireChannelRead(buf.retainedSlice(from, i + 1 - from)); // -> body(...)
                                from = i + 1;
                                if (state == State.AWAIT_FRAMING) {
                                    state = State.PASS; // the decoder refused the head: Reactor Netty answers
                                }
                            } else {
                                anyLine |= lineLength > 0;
                                lineStart = true;
                                lineLength = 0;
                            }
                        } else if (b != '\r') {
                            lineStart = false;
                            lineLength++;
                        }
                    }
                    case LENGTH, CHUNK_DATA -> {
                        long n = Math.min(remaining, end - i);
                        remaining -= n;
                        i += (int) n - 1;
                        if (remaining == 0 && state == State.LENGTH) {
                            startHead();
                        } else if (remaining == 0) {
                            ctx.fireChannelRead(buf.retainedSlice(from, i + 1 - from));
                            from = i + 1;
                            state = State.CHUNK_SIZE; // its bytes are held back until the line is checked
                        }
                    }
                    case CHUNK_SIZE -> {
                        from = i + 1;
                        if (b == '\n') {
                            long size = chunkSize(chunkLine);
                            if (size < 0) {
                                // a chunk size the decoder refuses: the request ends as any undecodable chunk does
                                ctx.fireChannelRead(Unpooled.wrappedBuffer(UNDECODABLE_CHUNK));
                                state = State.DROP;
                                return;
                            }
                            chunkLine.append('\n');
                            ctx.fireChannelRead(Unpooled.copiedBuffer(chunkLine, StandardCharsets.ISO_8859_1));
                            chunkLine.setLength(0);
                            state = size == 0 ? State.TRAILERS : State.CHUNK_DATA;
                            remaining = size + 2; // the data and its CRLF
                            lineLength = 0;
                        } else if (chunkLine.length() < MAX_CHUNK_LINE) {
                            chunkLine.append((char) (b & 0xff));
                        } else {
                            chunkLine.setCharAt(0, '!'); // too long: refused at its end
                        }
                    }
                    case TRAILERS -> {
                        if (b == '\n') {
                            if (lineLength == 0) {
                                startHead();
                            }
                            lineLength = 0;
                        } else if (b != '\r') {
                            lineLength++;
                        }
                    }
                    default -> {
                        return; // DROP: nothing more is handed on
                    }
                }
            }
            if (from < end && state != State.DROP) {
                ctx.fireChannelRead(buf.retainedSlice(from, end - from));
            }
        } finally {
            buf.release();
        }
    }

    /** The size of a chunk-size line (without its LF), or -1 when RFC 9112 does not allow it. */
    static long chunkSize(CharSequence line) {
        int n = line.length();
        if (n == 0 || line.charAt(n - 1) != '\r') {
            return -1;
        }
        int i = 0;
        long size = 0;
        while (i < n - 1 && Character.digit(line.charAt(i), 16) >= 0) {
            if (i >= 15) {
                return -1; // more than 60 bits
            }
            size = size * 16 + Character.digit(line.charAt(i), 16);
            i++;
        }
        if (i == 0) {
            return -1;
        }
        while (i < n - 1 && (line.charAt(i) == ' ' || line.charAt(i) == '\t')) {
            i++;
        }
        return i == n - 1 || line.charAt(i) == ';' ? size : -1;
    }

}
