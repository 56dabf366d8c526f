package io.tqserve.cli;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * A minimal HTTP/1.1 client over one keep-alive socket, for the load benchmark and the robustness tests. Written
 * by hand because the JDK's HttpClient hands a streamed body over in bursts (so time to first token would be
 * measured late) and refuses to send malformed requests (which a fuzz test must send), and a client that must
 * control every byte and see every byte as it arrives is small. It sends raw request bytes, reads the status
 * line and headers, and decodes a Content-Length or chunked body as a stream. Not thread-safe.
 */
public final class Http1Client implements Closeable {
    private static final int MAX_HEAD_BYTES = 64 * 1024;

    private final String host;
    private final int port;
    private final int timeoutMillis;
    private Socket socket;
    private InputStream in;
    private OutputStream out;

    /**
     * The status line and headers of a response.
     *
     * @param status  the status code
     * @param headers header names in lower case to the last value
     */
    public record Head(int status, Map<String, String> headers) {
        public String header(String name) {
            return headers.get(name.toLowerCase(Locale.ROOT));
        }
    }

    /** A whole response. */
    public record Response(int status, Map<String, String> headers, byte[] body) {
        public String text() {
            return new String(body, StandardCharsets.UTF_8);
        }

        public String header(String name) {
            return headers.get(name.toLowerCase(Locale.ROOT));
        }
    }

    public Http1Client(String host, int port, int timeoutMillis) {
        this.host = host;
        this.port = port;
        this.timeoutMillis = timeoutMillis;
    }

    /** A request with a body and Content-Length. */
    public static byte[] request(String method, String path, byte[] body, String... headers) {
        StringBuilder sb = new StringBuilder(256).append(method).append(' ').append(path).append(" HTTP/1.1\r\n")
                .append("Host: localhost\r\n");
        for (int i = 0; i + 1 < headers.length; i += 2) {
            sb.append(headers[i]).append(": ").append(headers[i + 1]).append("\r\n");
        }
        if (body != null) {
            sb.append("Content-Length: ").append(body.length).append("\r\n");
        }
        byte[] head = sb.append("\r\n").toString().getBytes(StandardCharsets.ISO_8859_1);
        if (body == null) {
            return head;
        }
        byte[] all = new byte[head.length + body.length];
        System.arraycopy(head, 0, all, 0, head.length);
        System.arraycopy(body, 0, all, head.length, body.length);
        return all;
    }

    /** A JSON POST. */
    public static byte[] postJson(String path, String json, String... headers) {
        String[] h = new String[headers.length + 2];
        h[0] = "Content-Type";
        h[1] = "application/json";
        System.arraycopy(headers, 0, h, 2, headers.length);
        return request("POST", path, json.getBytes(StandardCharsets.UTF_8), h);
    }

    /** Sends a request and reads the whole response. */
    public Response exchange(byte[] request) throws IOException {
        Head h = send(request);
        byte[] body = body(h).readAllBytes();
        return new Response(h.status(), h.headers(), body);
    }

    /**
     * Sends a request and reads the response head; read the body with {@link #body} before the next request.
     * A keep-alive connection the server closed meanwhile is reopened once, when nothing of a response was read.
     */
    public Head send(byte[] request) throws IOException {
        boolean fresh = socket == null;
        if (fresh) {
            connect();
        }
        try {
            out.write(request);
            out.flush();
            return readHead();
        } catch (EOFException | java.net.SocketException e) {
            if (fresh) {
                throw e;
            }
            close();
            connect();
            out.write(request);
            out.flush();
            return readHead();
        }
    }

    /** The decoded body of the response whose head was just read; the connection is closed at its end if asked. */
    public InputStream body(Head head) {
        boolean close = "close".equalsIgnoreCase(head.header("connection"));
        String te = head.header("transfer-encoding");
        String cl = head.header("content-length");
        InputStream raw;
        if (te != null && te.toLowerCase(Locale.ROOT).contains("chunked")) {
            raw = new ChunkedInput(in);
        } else if (cl != null) {
            raw = new LimitedInput(in, Long.parseLong(cl.trim()));
        } else {
            close = true;
            raw = in; // until the server closes
        }
        return close ? new CloseAtEnd(raw) : raw;
    }

    private void connect() throws IOException {
        socket = new Socket(host, port);
        socket.setTcpNoDelay(true);
        socket.setSoTimeout(timeoutMillis);
        in = new BufferedInputStream(socket.getInputStream(), 16 * 1024);
        out = socket.getOutputStream();
    }

    private Head readHead() throws IOException {
        String status = line(in);
        if (status == null) {
            throw new EOFException("the server closed the connection before answering");
        }
        String[] parts = status.split(" ", 3);
        if (parts.length < 2 || !parts[0].startsWith("HTTP/1.")) {
            throw new IOException("not an HTTP/1.x status line: " + status);
        }
        Map<String, String> headers = new LinkedHashMap<>();
        int bytes = status.length();
        String line;
        while ((line = line(in)) != null && !line.isEmpty()) {
            bytes += line.length();
            if (bytes > MAX_HEAD_BYTES) {
                throw new IOException("response head larger than " + MAX_HEAD_BYTES + " bytes");
            }
            int colon = line.indexOf(':');
            if (colon > 0) {
                headers.put(line.substring(0, colon).trim().toLowerCase(Locale.ROOT), line.substring(colon + 1).trim());
            }
        }
        return new Head(Integer.parseInt(parts[1]), headers);
    }

    /** One CRLF-terminated line in ISO-8859-1, or null at the end of the stream. */
    static String line(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream(64);
        int c;
        while ((c = in.read()) >= 0) {
            if (c == '\n') {
                byte[] a = b.toByteArray();
                int n = a.length > 0 && a[a.length - 1] == '\r' ? a.length - 1 : a.length;
                return new String(a, 0, n, StandardCharsets.ISO_8859_1);
            }
            b.write(c);
            if (b.size() > MAX_HEAD_BYTES) {
                throw new IOException("line longer than " + MAX_HEAD_BYTES + " bytes");
            }
        }
        return b.size() == 0 ? null : b.toString(StandardCharsets.ISO_8859_1);
    }

    /** One LF-terminated line of UTF-8 text (a CR before the LF dropped), or null at the end of the stream. */
    public static String utf8Line(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream(256);
        int c;
        while ((c = in.read()) >= 0) {
            if (c == '\n') {
                byte[] a = b.toByteArray();
                int n = a.length > 0 && a[a.length - 1] == '\r' ? a.length - 1 : a.length;
                return new String(a, 0, n, StandardCharsets.UTF_8);
            }
            b.write(c);
        }
        return b.size() == 0 ? null : b.toString(StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        if (socket != null) {
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing anyway
            }
            socket = null;
        }
    }

    /** Chunked transfer coding: hex size line, data, CRLF; a zero size and the trailers end it. */
    private static final class ChunkedInput extends InputStream {
        private final InputStream in;
        private final byte[] one = new byte[1];
        private long left;
        private boolean done;

        ChunkedInput(InputStream in) {
            this.in = in;
        }

        @Override
        public int read() throws IOException {
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (done) {
                return -1;
            }
            if (left == 0) {
                String size = line(in);
                if (size == null) {
                    throw new EOFException("the connection ended inside a chunked body");
                }
                int semi = size.indexOf(';');
                left = Long.parseLong((semi < 0 ? size : size.substring(0, semi)).trim(), 16);
                if (left == 0) {
                    String trailer;
                    while ((trailer = line(in)) != null && !trailer.isEmpty()) {
                        // trailers are ignored
                    }
                    done = true;
                    return -1;
                }
            }
            int n = in.read(b, off, (int) Math.min(len, left));
            if (n < 0) {
                throw new EOFException("the connection ended inside a chunk");
            }
            left -= n;
            if (left == 0) {
                line(in); // the CRLF after the chunk's data
            }
            return n;
        }
    }

    /** A body of a known length. */
    private static final class LimitedInput extends InputStream {
        private final InputStream in;
        private final byte[] one = new byte[1];
        private long left;

        LimitedInput(InputStream in, long length) {
            this.in = in;
            this.left = length;
        }

        @Override
        public int read() throws IOException {
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (left == 0) {
                return -1;
            }
            int n = in.read(b, off, (int) Math.min(len, left));
            if (n < 0) {
                throw new EOFException("the connection ended inside the body");
            }
            left -= n;
            return n;
        }
    }

    /** Closes the connection when the body has been read to its end. */
    private final class CloseAtEnd extends InputStream {
        private final InputStream body;

        CloseAtEnd(InputStream body) {
            this.body = body;
        }

        @Override
        public int read() throws IOException {
            if (socket == null) {
                return -1;
            }
            int c = body.read();
            if (c < 0) {
                Http1Client.this.close();
            }
            return c;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (socket == null) {
                return -1;
            }
            int n = body.read(b, off, len);
            if (n < 0) {
                Http1Client.this.close();
            }
            return n;
        }
    }
}
