package io.tqserve.deploy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * deploy/homebrew/tqserve.rb: Ruby accepts it ({@code ruby -c}, Debian's ruby; .ci/run installs it), and it
 * installs what the build and the repository really hold, and starts the service as the LaunchAgent does.
 */
class HomebrewFormulaTest {
    static final Path FORMULA = Path.of("deploy/homebrew/tqserve.rb");

    @Test
    void rubyAcceptsTheFormula() throws Exception {
        Process p;
        try {
            p = new ProcessBuilder("ruby", "-c", FORMULA.toString()).redirectErrorStream(true).start();
        } catch (IOException e) {
            assumeTrue(false, "ruby is not installed here (apt-get install ruby): only the file names are checked");
            return;
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        assertEquals("Syntax OK", out.strip());
    }

    @Test
    void theFormulaInstallsTheFilesTheBuildMakesAndRunsTheServiceLikeTheLaunchAgent() throws Exception {
        String rb = Files.readString(FORMULA);
        // the jar: pom.xml's finalName, where the launcher looks for it
        assertTrue(Files.readString(Path.of("pom.xml")).contains("<finalName>tqserve</finalName>"));
        assertTrue(Files.readString(Path.of("tqserve")).contains("JAR=\"$here/target/tqserve.jar\""));
        assertTrue(rb.contains("(libexec/\"target\").install \"target/tqserve.jar\""), rb);
        // the launcher and the embedded model, from the repository
        assertTrue(rb.contains("libexec.install \"tqserve\"") && Files.isExecutable(Path.of("tqserve")), rb);
        assertTrue(rb.contains("libexec.install \"models\"")
                && Files.isRegularFile(Path.of("models/tiny-llama-h128/config.json")), rb);
        assertTrue(rb.contains("opt_libexec/\"models/tiny-llama-h128\""), rb);
        assertTrue(rb.contains("depends_on \"mlx-c\"") && rb.contains("depends_on \"openjdk\""), rb);
        // the service: the same arguments as deploy/macos/io.tqserve.plist, the config in etc/tqserve/
        assertTrue(rb.contains("run [opt_bin/\"tqserve\", \"serve\", \"--config\", etc/\"tqserve/application.yml\", "
                + "\"--service\"]"), rb);
        String plist = Files.readString(Path.of("deploy/macos/io.tqserve.plist"));
        assertTrue(plist.contains("<string>serve</string>\n    <string>--config</string>\n    <string>@CONFIG@</string>\n"
                + "    <string>--service</string>"), plist);
        assertTrue(rb.contains("environment_variables TQSERVE_LOG_DIR: var/\"log/tqserve\""), rb);
        assertTrue(rb.contains("keep_alive crashed: true") && rb.contains("process_type :interactive"), rb);
    }
}
