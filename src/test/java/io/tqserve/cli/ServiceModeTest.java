package io.tqserve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server as a service runs it: started from the file {@code config init} wrote ({@code --config FILE}), in
 * service mode ({@code --service}: logs in rolling files, nothing on the console), stopped by SIGTERM.
 */
class ServiceModeTest {
    @TempDir
    Path tmp;

    @Test
    void theStarterFileServesAndSigtermStopsCleanlyWithTheLogInTheLogFolder() throws Exception {
        Path config = tmp.resolve("conf/application.yml");
        assertEquals(0, ConfigCommand.run(new String[] {"config", "init", "--out", config.toString()}));
        Path logs = tmp.resolve("logs");
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java, "--add-modules", "jdk.incubator.vector",
                "--enable-native-access=ALL-UNNAMED", "-Xmx512m", "-cp", System.getProperty("java.class.path"),
                TqserveMain.class.getName(), "serve", "--config", config.toString(), "--service",
                "--server.port=" + port, "--tqserve.backend.warmup=0",
                "--tqserve.structured-output.warmup=0"));
        Path stdout = tmp.resolve("stdout");
        Path stderr = tmp.resolve("stderr");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(stdout.toFile()).redirectError(stderr.toFile());
        pb.environment().putAll(Map.of("TQSERVE_LOG_DIR", logs.toString()));
        Process server = pb.start();
        try {
            HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
            String base = "http://127.0.0.1:" + port;
            awaitReady(http, base, server, logs);
            HttpResponse<String> models = http.send(HttpRequest.newBuilder(URI.create(base + "/v1/models")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, models.statusCode(), models.body());
            assertTrue(models.body().contains("\"id\":\"tiny-llama-h128\""), models.body());

            long t0 = System.nanoTime();
            server.destroy(); // SIGTERM
            // the drain grace period is 15 s; a clean stop with nothing running takes far less (generous margin)
            assertTrue(server.waitFor(60, TimeUnit.SECONDS), "still running 60 s after SIGTERM");
            long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - t0);
            assertEquals(143, server.exitValue(), "exit code after SIGTERM" + Files.readString(stderr));
            assertTrue(seconds < 60);
        } finally {
            server.destroyForcibly();
        }
        assertEquals("", Files.readString(stdout, StandardCharsets.UTF_8), "service mode writes no console log");
        String log = Files.readString(logs.resolve("tqserve.log"), StandardCharsets.UTF_8);
        assertTrue(log.contains("config file location: file:" + config), log);
        assertTrue(log.contains("Config resource 'file [" + config + "]'"), log);
        assertTrue(log.contains("Graceful shutdown complete"), log);
    }

    /** Polls readiness (6 minutes at most: a loaded 2-core CI machine can take minutes) until it answers 200. */
    private static void awaitReady(HttpClient http, String base, Process server, Path logs) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(6);
        HttpRequest ready = HttpRequest.newBuilder(URI.create(base + "/actuator/health/readiness"))
                .timeout(Duration.ofSeconds(5)).build();
        while (true) {
            try {
                if (http.send(ready, HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
                    return;
                }
            } catch (IOException e) {
                // not listening yet
            }
            if (!server.isAlive() || System.nanoTime() > deadline) {
                Path log = logs.resolve("tqserve.log");
                throw new AssertionError("not ready (alive: " + server.isAlive() + ")\n"
                        + (Files.exists(log) ? Files.readString(log) : "no log"));
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
        }
    }
}
