package io.tqserve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code service install|uninstall|status}: the files written (parsed as launchd and systemd read them) name the
 * launcher, the config file and the log folder, and the service manager gets exactly the expected commands — run
 * through a recording runner, never for real on this machine.
 */
class ServiceCommandTest {
    static final Path LAUNCHER = Path.of("tqserve").toAbsolutePath();

    @TempDir
    Path home;

    final List<List<String>> ran = new ArrayList<>();
    final ByteArrayOutputStream out = new ByteArrayOutputStream();
    final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private ServiceCommand.Host host(boolean mac, int exit, String output) {
        return new ServiceCommand.Host(new HostPaths(mac, home, Map.of()), argv -> {
            ran.add(argv);
            return new ServiceCommand.Result(exit, output);
        }, 501, true, LAUNCHER.toString());
    }

    private int service(ServiceCommand.Host host, String... args) throws Exception {
        List<String> all = new ArrayList<>(List.of("service"));
        all.addAll(List.of(args));
        return ServiceCommand.run(all.toArray(String[]::new), host, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    @Test
    void installOnMacWritesTheLaunchAgentAndBootstrapsItInTheUsersGuiDomain() throws Exception {
        assertEquals(0, service(host(true, 0, ""), "install"));
        Path plist = home.resolve("Library/LaunchAgents/io.tqserve.plist");
        Path config = home.resolve("Library/Application Support/tqserve/application.yml");
        Path logs = home.resolve("Library/Logs/tqserve");
        assertEquals(List.of(List.of("launchctl", "bootout", "gui/501/io.tqserve"),
                List.of("launchctl", "bootstrap", "gui/501", plist.toString())), ran);
        assertEquals(plist + "\n", out.toString(StandardCharsets.UTF_8));
        assertTrue(Files.isRegularFile(config), "a starter config file is written when there is none");
        assertTrue(Files.isDirectory(logs));

        @SuppressWarnings("unchecked")
        Map<String, Object> p = (Map<String, Object>) Plist.read(plist);
        assertEquals("io.tqserve", p.get("Label"));
        assertEquals(List.of(LAUNCHER.toString(), "serve", "--config", config.toString(), "--service"),
                p.get("ProgramArguments"));
        assertEquals(logs.toString(), ((Map<?, ?>) p.get("EnvironmentVariables")).get("TQSERVE_LOG_DIR"));
        assertEquals(logs.resolve("stdout.log").toString(), p.get("StandardOutPath"));
        assertEquals(logs.resolve("stderr.log").toString(), p.get("StandardErrorPath"));
        assertEquals(Map.of("Crashed", true, "SuccessfulExit", false), p.get("KeepAlive"));
        assertEquals(30L, p.get("ThrottleInterval"));
        assertEquals("Interactive", p.get("ProcessType"));
        assertEquals(true, p.get("RunAtLoad"));
        assertTrue((Long) p.get("ExitTimeOut") > 15 + 10, "above the drain grace period and the lane close");

        String python = pythonPlistArguments(plist);
        if (python != null) {
            assertEquals(JsonMapper.shared().writeValueAsString(p.get("ProgramArguments")), python.strip());
        }
    }

    /** ProgramArguments as Python's plistlib reads them (JSON), or null without python3. */
    private static String pythonPlistArguments(Path plist) throws Exception {
        Process p;
        try {
            p = new ProcessBuilder("python3", "-c", "import json, plistlib, sys; "
                    + "print(json.dumps(plistlib.load(open(sys.argv[1], 'rb'))['ProgramArguments'], "
                    + "separators=(',', ':')))", plist.toString()).redirectErrorStream(true).start();
        } catch (java.io.IOException e) {
            return null;
        }
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), output);
        return output;
    }

    @Test
    void theTemplatesOfDeployMacosAreValidPlists() throws Exception {
        for (String name : List.of("io.tqserve.plist", "io.tqserve.daemon.plist")) {
            @SuppressWarnings("unchecked")
            Map<String, Object> p = (Map<String, Object>) Plist.read(Path.of("deploy/macos", name));
            assertEquals(List.of("@LAUNCHER@", "serve", "--config", "@CONFIG@", "--service"), p.get("ProgramArguments"),
                    name);
            assertEquals("@LOG_DIR@/stderr.log", p.get("StandardErrorPath"), name);
        }
        assertEquals(Files.readString(Path.of("deploy/macos/io.tqserve.plist")),
                ServiceCommand.template("io.tqserve.plist"), "the jar carries deploy/macos's template");
    }

    @Test
    void uninstallAndStatusOnMacUseBootoutAndPrint() throws Exception {
        service(host(true, 0, ""), "install");
        ran.clear();
        out.reset();
        assertEquals(0, service(host(true, 0, "state = running\npid = 42\n"), "status"));
        assertEquals(List.of(List.of("launchctl", "print", "gui/501/io.tqserve")), ran);
        String status = out.toString(StandardCharsets.UTF_8);
        assertTrue(status.contains("service file: " + home.resolve("Library/LaunchAgents/io.tqserve.plist") + "\n"),
                status);
        assertTrue(status.contains("logs: " + home.resolve("Library/Logs/tqserve/tqserve.log") + "\n"), status);
        assertTrue(status.endsWith("state = running\npid = 42\n"), status);
        ran.clear();
        assertEquals(3, service(host(true, 113, "Could not find service"), "status"), "not loaded");
        ran.clear();
        assertEquals(0, service(host(true, 0, ""), "uninstall"));
        assertEquals(List.of(List.of("launchctl", "bootout", "gui/501/io.tqserve")), ran);
        assertFalse(Files.exists(home.resolve("Library/LaunchAgents/io.tqserve.plist")));
    }

    @Test
    void aFailedBootstrapIsExitOneWithLaunchctlsWords() throws Exception {
        assertEquals(1, service(host(true, 5, "Bootstrap failed: 5: Input/output error"), "install"));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("launchctl bootstrap failed (exit 5): Bootstrap "
                + "failed: 5: Input/output error"), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void installOnLinuxWritesASystemdUserUnitThatSystemdAccepts() throws Exception {
        Path config = home.resolve("my config.yml");
        Files.writeString(config, "server:\n  port: 8080\n");
        assertEquals(0, service(host(false, 0, ""), "install", "--config", config.toString()));
        Path unit = home.resolve(".config/systemd/user/tqserve.service");
        assertEquals(List.of(List.of("systemctl", "--user", "daemon-reload"),
                List.of("systemctl", "--user", "enable", "--now", "tqserve.service")), ran);
        String text = Files.readString(unit);
        assertTrue(text.contains("\nExecStart=\"" + LAUNCHER + "\" serve --config \"" + config + "\" --service\n"),
                text);
        assertTrue(text.contains("\nEnvironment=\"TQSERVE_LOG_DIR=" + home.resolve(".local/state/tqserve/logs")
                + "\"\n"), text);
        assertEquals("server:\n  port: 8080\n", Files.readString(config), "an existing config file is kept");

        ran.clear();
        assertEquals(0, service(host(false, 0, ""), "uninstall"));
        assertEquals(List.of(List.of("systemctl", "--user", "disable", "--now", "tqserve.service"),
                List.of("systemctl", "--user", "daemon-reload")), ran);
        assertFalse(Files.exists(unit));
    }

    @Test
    void systemdAnalyzeVerifiesTheWrittenUnit() throws Exception {
        Path analyze = Path.of("/usr/bin/systemd-analyze");
        assumeTrue(Files.isExecutable(analyze) || ServiceCommand.onPath("systemd-analyze", System.getenv("PATH")),
                "systemd-analyze is not installed here: the unit is only written and read back");
        Path config = home.resolve("application.yml");
        Files.writeString(config, "server:\n  port: 8080\n");
        assertEquals(0, service(host(false, 0, ""), "install", "--config", config.toString()));
        Path unit = home.resolve(".config/systemd/user/tqserve.service");
        Process p = new ProcessBuilder("systemd-analyze", "verify", unit.toString()).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "systemd-analyze did not finish");
        assertEquals(0, p.exitValue(), output);
        assertFalse(output.contains("tqserve.service:"), "systemd-analyze warns about the unit:\n" + output);
    }

    @Test
    void withoutALauncherInstallSaysWhatToPass() {
        ServiceCommand.Host h = new ServiceCommand.Host(new HostPaths(true, home, Map.of()), argv -> {
            throw new AssertionError("nothing may run");
        }, 501, false, null);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> service(h, "install"));
        assertEquals("the launcher to run is unknown: run this through the tqserve launcher script, or pass "
                + "--launcher PATH", e.getMessage());
    }
}
