package io.tqserve.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

class GenerateCommandTest {

    static String greedyReference() throws Exception {
        return JsonMapper.shared()
                .readTree(Files.readString(Path.of("models/tiny-llama-h128/reference_outputs.json")))
                .path("prompts").get(0).path("greedy_32_text").asString();
    }

    @Test
    void greedyGenerationPrintsExactlyTheReferenceText() throws Exception {
        String expected = greedyReference();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = GenerateCommand.run(new String[] {"generate", "--prompt", "The quick brown fox", "--max-tokens", "32",
                "--temperature", "0"}, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(0, code, err.toString(StandardCharsets.UTF_8));
        assertEquals(expected, out.toString(StandardCharsets.UTF_8));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("decode 32 tokens"), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void unknownOptionIsAnErrorNamingIt() {
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> GenerateCommand.run(new String[] {"generate", "--prompt", "x", "--bogus", "1"},
                        new PrintStream(new ByteArrayOutputStream()), new PrintStream(new ByteArrayOutputStream())));
        assertTrue(e.getMessage().contains("--bogus"), e.getMessage());
    }

    /**
     * The verb as a user runs it: {@code TqserveMain generate} in its own JVM (as the launcher starts it, from this
     * build's classpath). Its stdout is exactly the generated text — every log line (tokenizer library included) and
     * the backend line go to stderr, so the output can be piped.
     */
    @Test
    void generateInItsOwnProcessWritesOnlyTheGeneratedTextToStdout() throws Exception {
        CliProcess p = CliProcess.run("generate", "--prompt", "The quick brown fox", "--max-tokens", "32",
                "--temperature", "0", "--threads", "1");
        String err = p.stderr();
        assertEquals(0, p.exit(), err);
        assertEquals(greedyReference(), p.stdout(), err);
        assertTrue(err.contains("tqserve: backend auto -> "), err);
        assertTrue(err.contains("decode 32 tokens"), err);
    }
}
