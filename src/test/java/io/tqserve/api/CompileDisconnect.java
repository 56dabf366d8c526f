package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.DoubleSupplier;

/**
 * A client that posts a chat request and goes away while its schema compiles: the pool's hook holds the compile
 * where a slow one would be, and the compile thread must be interrupted and counted as cancelled.
 */
final class CompileDisconnect {
    private CompileDisconnect() {
    }

    /**
     * Sends {@code body} to {@code /v1/chat/completions} on {@code port} with the extra header lines {@code headers}
     * (each ending in CRLF), closes the connection once the compile has started, and asserts that the compile is
     * interrupted and that {@code cancelled} (the cancelled-compiles counter) grows by one.
     */
    static void assertCancelsItsCompile(ConstraintPool pool, int port, String headers, byte[] body,
            DoubleSupplier cancelled) throws Exception {
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch interrupted = new CountDownLatch(1);
        CountDownLatch never = new CountDownLatch(1);
        double before = cancelled.getAsDouble();
        pool.setCompileHook(() -> {
            entered.countDown();
            try {
                never.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                interrupted.countDown();
                throw e;
            }
        });
        try {
            try (Socket socket = new Socket("localhost", port)) {
                OutputStream out = socket.getOutputStream();
                out.write(("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n" + headers
                        + "Content-Type: application/json\r\nContent-Length: " + body.length + "\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                out.write(body);
                out.flush();
                assertThat(entered.await(60, TimeUnit.SECONDS)).as("the compile started").isTrue();
            } // the client goes away while its compile runs
            assertThat(interrupted.await(60, TimeUnit.SECONDS)).as("the compile thread was interrupted").isTrue();
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (cancelled.getAsDouble() == before && System.nanoTime() < until) {
                LockSupport.parkNanos(1_000_000); // the outcome is recorded right after the compile thread returns
            }
            assertThat(cancelled.getAsDouble()).isEqualTo(before + 1);
        } finally {
            pool.setCompileHook(ConstraintPool.CompileHook.NONE);
        }
    }
}
