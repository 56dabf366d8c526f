package io.tqserve.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where {@code serve} takes its settings and writes its logs, per host and command line. */
class ServeLaunchTest {
    @TempDir
    Path home;

    @Test
    void withoutConfigTheHostsConfigFileIsAnOptionalAdditionalLocation() {
        ServeCommand.Launch mac = ServeCommand.Launch.of(new String[] {"serve", "--server.port=9000"},
                new HostPaths(true, home, Map.of()));
        assertEquals(Map.of("spring.config.additional-location", "optional:file:" + home
                + "/Library/Application Support/tqserve/application.yml"), mac.defaults());
        assertArrayEquals(new String[] {"--server.port=9000"}, mac.springArgs());
        ServeCommand.Launch linux = ServeCommand.Launch.of(new String[0],
                new HostPaths(false, home, Map.of("XDG_CONFIG_HOME", "/etc/xdg-test")));
        assertEquals("optional:file:/etc/xdg-test/tqserve/application.yml",
                linux.defaults().get("spring.config.additional-location"));
        ServeCommand.Launch th = ServeCommand.Launch.of(new String[0],
                new HostPaths(true, home, Map.of("TQSERVE_HOME", "/srv/tq")));
        assertEquals("optional:file:/srv/tq/application.yml", th.defaults().get("spring.config.additional-location"));
    }

    @Test
    void configFileAndServiceModeSetTheLocationAndRollingFileLogs() throws Exception {
        Path config = Files.writeString(home.resolve("app.yml"), "server:\n  port: 1\n");
        ServeCommand.Launch l = ServeCommand.Launch.of(new String[] {"--config", "app.yml", "--service", "--debug"},
                new HostPaths(true, home, Map.of("TQSERVE_CWD", home.toString())));
        assertEquals(Map.of("spring.config.additional-location", "file:" + config,
                "logging.file.name", home + "/Library/Logs/tqserve/tqserve.log",
                "logging.logback.rollingpolicy.max-file-size", "10MB",
                "logging.logback.rollingpolicy.max-history", "7",
                "logging.logback.rollingpolicy.total-size-cap", "100MB",
                "logging.threshold.console", "OFF"), l.defaults());
        assertArrayEquals(new String[] {"--debug"}, l.springArgs());
        ServeCommand.Launch linux = ServeCommand.Launch.of(new String[] {"--service"},
                new HostPaths(false, home, Map.of()));
        assertEquals(home + "/.local/state/tqserve/logs/tqserve.log", linux.defaults().get("logging.file.name"));
    }

    @Test
    void aConfigFileThatDoesNotExistIsRefusedWithTheFix() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ServeCommand.Launch.of(
                new String[] {"--config=" + home.resolve("none.yml")}, new HostPaths(true, home, Map.of())));
        assertEquals("--config " + home.resolve("none.yml") + ": no such file (tqserve config init --out "
                + home.resolve("none.yml") + " writes a starter)", e.getMessage());
    }
}
