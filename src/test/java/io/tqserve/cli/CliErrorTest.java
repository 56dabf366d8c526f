package io.tqserve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** How {@link TqserveMain} reports a setting it cannot honour: one line on stderr, nothing on stdout, exit 1. */
class CliErrorTest {
    @Test
    void aBackendThatCannotHonourASettingIsOneLineNamingItAndExitOne() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        File stderr = File.createTempFile("tqserve-cli", ".err");
        stderr.deleteOnExit();
        List<String> cmd = List.of(java, "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), TqserveMain.class.getName(), "bench", "decode",
                "--backend", "cpu", "--mlx-turbo-kernel", "metal", "--no-sweep", "--threads", "1");
        Process p = new ProcessBuilder(cmd).redirectError(stderr).start();
        p.getOutputStream().close();
        byte[] out = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "bench did not finish in 120 s");
        String err = Files.readString(stderr.toPath(), StandardCharsets.UTF_8);
        assertEquals(1, p.exitValue(), err);
        assertEquals("", new String(out, StandardCharsets.UTF_8));
        assertTrue(err.contains("tqserve: tqserve.backend.mlx.turbo-kernel=metal needs the mlx backend on a Metal "
                + "device, but backend cpu (requested)"), err);
        assertFalse(err.contains("Exception"), err);
    }
}
