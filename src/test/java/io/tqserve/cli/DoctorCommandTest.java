package io.tqserve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.BackendSelector;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code doctor}: every check printed, the ones that should fail on this machine failing with what to do. */
class DoctorCommandTest {
    static final List<String> NAMES = List.of("jdk", "mlx", "memory", "model", "fit", "port", "config", "keys");

    @TempDir
    Path tmp;

    private DoctorCommand.Host host() {
        return new DoctorCommand.Host(new HostPaths(false, tmp, Map.of()), true, true, 16L << 30, 1L << 30);
    }

    private static DoctorCommand.Check check(List<DoctorCommand.Check> checks, String name) {
        return checks.stream().filter(c -> c.name().equals(name)).findFirst().orElseThrow();
    }

    @Test
    void onThisMachineWithTheDefaultsMlxAndKeysFailWithTheFix() {
        List<DoctorCommand.Check> checks = DoctorCommand.checks(host(), tmp.resolve("none.yml"), false, Map.of());
        assertEquals(NAMES, checks.stream().map(DoctorCommand.Check::name).toList());
        boolean mlxHere = BackendSelector.discover("", System.getenv(), BackendSelector.DEFAULT_DIRS).library()
                .isPresent();
        if (!mlxHere) {
            DoctorCommand.Check mlx = check(checks, "mlx");
            assertFalse(mlx.ok());
            assertTrue(mlx.line().startsWith("FAIL  mlx     no MLX-C library (" + BackendSelector.libraryFileName()
                    + ") found, so the server runs on the CPU; looked at "), mlx.line());
            assertTrue(mlx.text().endsWith("; fix: install MLX-C (brew install mlx-c) or set MLXC_LIBRARY or "
                    + "tqserve.backend.mlx.library to it, or set tqserve.backend.type=cpu to serve on the CPU on "
                    + "purpose"), mlx.text());
        }
        assertEquals(new DoctorCommand.Check("keys", false, "no API keys while listening on every interface "
                + "(server.address unset); fix: set tqserve.api.keys (or TQSERVE_API_KEYS), or "
                + "server.address=127.0.0.1"), check(checks, "keys"));
        assertTrue(check(checks, "config").ok(), "no config file: the packaged defaults apply");
        assertTrue(check(checks, "model").ok(), check(checks, "model").text());
        assertTrue(check(checks, "model").text().endsWith("tiny-llama-h128: LLAMA, 6 layers, head_dim 128, "
                + "56 tensors, tokenizer.json, chat template, weights bfloat16"), check(checks, "model").text());
        assertTrue(check(checks, "jdk").ok());
    }

    @Test
    void theStarterFileOfThisHostPassesEveryCheck() throws Exception {
        Path config = tmp.resolve("application.yml");
        Files.writeString(config, ConfigCommand.starter(Path.of(TqserveMain.DEFAULT_MODEL).toAbsolutePath(), 0,
                ConfigCommand.detectBackend(), new SecureRandom()));
        List<DoctorCommand.Check> checks = DoctorCommand.checks(host(), config, true, Map.of());
        assertEquals(NAMES, checks.stream().map(DoctorCommand.Check::name).toList());
        assertTrue(checks.stream().allMatch(DoctorCommand.Check::ok), checks.toString());
        assertEquals("no API keys, listening on 127.0.0.1 only", check(checks, "keys").text());
        assertEquals(config + " is valid", check(checks, "config").text());
    }

    @Test
    void aPortInUseABadFileAndAMissingModelFailWithWhatToDo() throws Exception {
        try (ServerSocket busy = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Path config = tmp.resolve("bad.yml");
            Files.writeString(config, """
                    server:
                      port: %d
                      address: 127.0.0.1
                    tqserve:
                      model:
                        path: %s
                      lanes:
                        turbo:
                          queue-capcity: 3
                      api:
                        keys: [k1]
                    """.formatted(busy.getLocalPort(), tmp.resolve("no-model")));
            List<DoctorCommand.Check> checks = DoctorCommand.checks(host(), config, true, Map.of());
            DoctorCommand.Check port = check(checks, "port");
            assertFalse(port.ok());
            assertTrue(port.text().startsWith("127.0.0.1:" + busy.getLocalPort() + " cannot be bound ("), port.text());
            assertTrue(port.text().endsWith("; fix: stop it or set server.port"), port.text());
            // the problems in the order of the file: the model folder (line 6), then the unknown key (line 10)
            assertEquals(new DoctorCommand.Check("config", false, "2 problem(s), first " + config
                    + ":6: tqserve.model.path: model folder " + tmp.resolve("no-model") + " does not exist; set "
                    + "tqserve.model.path to a Hugging Face model folder; fix: tqserve config check " + config
                    + " lists them by line"), check(checks, "config"));
            assertEquals(new DoctorCommand.Check("model", false, tmp.resolve("no-model") + " is not a folder; fix: "
                    + "set tqserve.model.path to a Hugging Face model folder (config.json, tokenizer.json, "
                    + "*.safetensors)"), check(checks, "model"));
            assertEquals("API keys set; listening on 127.0.0.1", check(checks, "keys").text());
        }
    }

    @Test
    void theVerbPrintsOnlyTheReportOnStdoutAndExitsNonZero() throws Exception {
        CliProcess p = CliProcess.run("doctor", "--config", tmp.resolve("missing.yml").toString());
        assertEquals(1, p.exit(), p.stderr());
        List<String> lines = p.stdout().lines().toList();
        assertEquals(NAMES.size(), lines.size(), p.stdout());
        for (int i = 0; i < NAMES.size(); i++) {
            assertTrue(lines.get(i).matches("(ok  |FAIL)  " + String.format("%-7s", NAMES.get(i)) + " .+"),
                    lines.get(i));
        }
        assertTrue(lines.get(6).startsWith("FAIL  config  " + tmp.resolve("missing.yml") + " does not exist; fix: "
                + "tqserve config init --out "), lines.get(6));
    }
}
