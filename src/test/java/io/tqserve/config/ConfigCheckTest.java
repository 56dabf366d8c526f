package io.tqserve.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.model.SafetensorsWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code config check}: a file is refused with the server's own rules, each problem naming the key and the line of
 * the file that sets it.
 */
class ConfigCheckTest {
    @TempDir
    Path tmp;

    private Path write(String name, String yaml) throws Exception {
        Path f = tmp.resolve(name);
        Files.writeString(f, yaml);
        return f;
    }

    @Test
    void aFileTheServerStartsFromHasNoProblems() throws Exception {
        Path f = write("ok.yml", """
                server:
                  port: 9000
                tqserve:
                  kv:
                    scheme: turbo:k4v2
                """);
        assertEquals(List.of(), ConfigCheck.check(f));
    }

    @Test
    void unknownKeyBadSchemeBadRangeAndABudgetThatCannotFitAreEachNamedWithTheirLine() throws Exception {
        Path f = write("bad.yml", """
                # a comment
                tqserve:
                  kv:
                    scheme: turbo:k9v3
                  lanes:
                    turbo:
                      queue-capcity: 3
                    batched:
                      max-batch: 0
                      kv-budget: 100TB
                """);
        List<ConfigCheck.Problem> problems = ConfigCheck.check(f);
        assertEquals(List.of("tqserve.kv.scheme@4", "tqserve.lanes.turbo.queue-capcity@7",
                "tqserve.lanes.batched.max-batch@9", "tqserve.lanes.batched.kv-budget@10"),
                problems.stream().map(p -> p.key() + "@" + p.line()).toList(), problems.toString());
        assertTrue(problems.get(0).message().startsWith("value turbo:k9v3 cannot be used: invalid KV scheme "
                + "'turbo:k9v3'; accepted: bf16, turbo:k<kbits>v<vbits>"), problems.get(0).message());
        assertTrue(problems.get(1).message().startsWith("unknown key"), problems.get(1).message());
        assertEquals("value 0 must be greater than or equal to 1", problems.get(2).message());
        assertTrue(problems.get(3).message().startsWith("the KV budgets of the lanes may hold up to "),
                problems.get(3).message());
        assertEquals(f + ":4: tqserve.kv.scheme: " + problems.get(0).message(), problems.get(0).render(f));
    }

    @Test
    void aHeadDimTheSchemeCannotServeNamesTheSchemeLine(@TempDir Path models) throws Exception {
        Path h96 = models.resolve("llama-h96");
        SafetensorsWriter.writeLlama(h96, 192, 64, 1, 2, 1, 96, 8192, 256, Path.of("models/tiny-llama-h128"), 96);
        Path f = write("h96.yml", """
                tqserve:
                  model:
                    path: %s
                  kv:
                    scheme: turbo:k8v3
                """.formatted(h96));
        List<ConfigCheck.Problem> problems = ConfigCheck.check(f);
        assertEquals(1, problems.size(), problems.toString());
        assertEquals(new ConfigCheck.Problem("tqserve.kv.scheme", 5,
                StartupValidationTest.HEAD_DIM_96_MESSAGE), problems.get(0));
    }

    @Test
    void aModelFolderThatDoesNotExistAndAValueTheRecordRefusesAreNamed() throws Exception {
        Path f = write("model.yml", """
                tqserve:
                  api:
                    queue-full-status: 404
                  model:
                    path: /nonexistent/model
                """);
        List<ConfigCheck.Problem> problems = ConfigCheck.check(f);
        assertEquals(List.of("tqserve.api.queue-full-status@3", "tqserve.model.path@5"),
                problems.stream().map(p -> p.key() + "@" + p.line()).toList(), problems.toString());
        assertEquals("model folder /nonexistent/model does not exist; set tqserve.model.path to a Hugging Face "
                + "model folder", problems.get(1).message());
    }

    @Test
    void aKeyNoSettingHasIsReportedOutsideTqserveTooWhileMapsAndListsOfSettingsPass() throws Exception {
        Path f = write("spring.yml", """
                server:
                  prot: 9000
                  address: 127.0.0.1
                logging:
                  level:
                    io.tqserve: debug
                management:
                  endpoints:
                    web:
                      exposure:
                        include: [health, prometheus]
                sever:
                  port: 9000
                """);
        List<ConfigCheck.Problem> problems = ConfigCheck.check(f);
        assertEquals(List.of("server.prot@2", "sever.port@13"),
                problems.stream().map(p -> p.key() + "@" + p.line()).toList(), problems.toString());
        assertTrue(problems.get(0).message().startsWith("no setting has this name, so the server would ignore it"),
                problems.get(0).message());
    }

    @Test
    void thePackagedApplicationYmlUsesOnlyKnownSettings() throws Exception {
        Path packaged = Path.of("src/main/resources/application.yml");
        assertEquals(List.of(), ConfigCheck.check(packaged));
    }

    @Test
    void aFileThatIsNotYamlNamesTheLine() throws Exception {
        Path f = write("broken.yml", "tqserve:\n  kv:\n    scheme: [unclosed\n  lanes: {}\n");
        List<ConfigCheck.Problem> problems = ConfigCheck.check(f);
        assertEquals(1, problems.size(), problems.toString());
        assertTrue(problems.get(0).line() > 0 && problems.get(0).message().startsWith("not a readable YAML file"),
                problems.toString());
    }
}
