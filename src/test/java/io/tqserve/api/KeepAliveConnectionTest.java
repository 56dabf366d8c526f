package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.config.TqserveApplication;
import io.tqserve.routing.ServingRuntime;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * Many requests one after another on one keep-alive connection, as pooling clients send them, each answered.
 * Guards {@link AsyncDispatchFilter}: without it Reactor Netty 1.3.6 stopped reading such a connection after a
 * few dozen requests (reactor/reactor-netty#4361) and the next request hung.
 */
@SpringBootTest(classes = TqserveApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class KeepAliveConnectionTest {
    @LocalServerPort
    int port;
    @Autowired
    ServingRuntime runtime;

    /** Reads one HTTP/1.1 response (Content-Length or chunked) and returns its status code. */
    static int readResponse(InputStream in) throws IOException {
        String status = line(in);
        int contentLength = -1;
        boolean chunked = false;
        for (String h = line(in); !h.isEmpty(); h = line(in)) {
            String lower = h.toLowerCase(Locale.ROOT);
            if (lower.startsWith("content-length:")) {
                contentLength = Integer.parseInt(h.substring(15).trim());
            } else if (lower.startsWith("transfer-encoding:") && lower.contains("chunked")) {
                chunked = true;
            }
        }
        if (chunked) {
            for (int size = Integer.parseInt(line(in).trim(), 16); size > 0;
                    size = Integer.parseInt(line(in).trim(), 16)) {
                in.readNBytes(size);
                line(in);
            }
            line(in);
        } else if (contentLength > 0) {
            in.readNBytes(contentLength);
        }
        return Integer.parseInt(status.split(" ")[1]);
    }

    static String line(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        for (int c = in.read(); c != '\n'; c = in.read()) {
            if (c < 0) {
                throw new IOException("connection closed");
            }
            if (c != '\r') {
                b.write(c);
            }
        }
        return b.toString(StandardCharsets.US_ASCII);
    }

    @Test
    void everyRequestOnOneKeepAliveConnectionIsAnswered() throws Exception {
        runtime.whenLoaded().get(60, TimeUnit.SECONDS); // health is 503 until then
        String[] paths = {"/actuator/health", "/actuator/health/readiness", "/v1/models", "/v1/nope",
            "/actuator/env", "/actuator/metrics/tqserve.kv.bytes.per.token"};
        int[] expected = {200, 200, 200, 404, 404, 200};
        try (Socket socket = new Socket("localhost", port)) {
            socket.setSoTimeout(20_000);
            OutputStream out = socket.getOutputStream();
            InputStream in = socket.getInputStream();
            for (int i = 0; i < 300; i++) {
                int k = i % paths.length;
                out.write(("GET " + paths[k] + " HTTP/1.1\r\nHost: localhost\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                out.flush();
                assertThat(readResponse(in)).as("request " + i + " " + paths[k]).isEqualTo(expected[k]);
            }
        }
    }
}
