package io.tqserve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** How {@link TqserveMain} reports a setting it cannot honour: one line on stderr, nothing on stdout, exit 1. */
class CliErrorTest {
    @Test
    void aBackendThatCannotHonourASettingIsOneLineNamingItAndExitOne() throws Exception {
        CliProcess p = CliProcess.run("bench", "decode", "--backend", "cpu", "--mlx-turbo-kernel", "metal",
                "--no-sweep", "--threads", "1");
        assertEquals(1, p.exit(), p.stderr());
        assertEquals("", p.stdout());
        assertTrue(p.stderr().contains("tqserve: tqserve.backend.mlx.turbo-kernel=metal needs the mlx backend on a "
                + "Metal device, but backend cpu (requested)"), p.stderr());
        assertFalse(p.stderr().contains("Exception"), p.stderr());
    }
}
