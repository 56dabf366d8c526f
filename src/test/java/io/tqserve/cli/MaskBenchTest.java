package io.tqserve.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.constraint.Vocabulary;
import io.tqserve.model.TokenBytes;
import io.tqserve.model.Tokenizer;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The MaskBench runner on a 20-schema sample of MaskBench (provenance in {@code maskbench-sample/README.md}),
 * with the embedded model's vocabulary: the counts per category are exact, so a change in the constraint
 * package's coverage (or in the runner's scoring) shows here.
 */
class MaskBenchTest {
    private static final Path SAMPLE = Path.of("src/test/resources/maskbench-sample");
    private static Tokenizer tokenizer;
    private static MaskBench.Engine engine;

    @BeforeAll
    static void load() throws Exception {
        Path dir = MaskBench.tokenizerDir(Path.of(TqserveMain.DEFAULT_MODEL));
        tokenizer = Tokenizer.load(dir);
        engine = new MaskBench.Engine(new Vocabulary(TokenBytes.load(dir)),
                tokenizer.eosTokenIds(), t -> tokenizer.encode(t, false), System::nanoTime);
    }

    @AfterAll
    static void close() {
        tokenizer.close();
    }

    @Test
    void theTailListNamesTheSchemasWithMasksOfAMillisecondOrMoreMostFirst() {
        List<MaskBench.Outcome> outcomes = List.of(
                new MaskBench.Outcome("a.json", MaskBench.Status.PASSING, "", null, 0,
                        new long[] {5_000, 1_000_000, 20_000}, 1),
                new MaskBench.Outcome("b.json", MaskBench.Status.PASSING, "", null, 0, new long[] {999_999}, 1),
                new MaskBench.Outcome("c.json", MaskBench.Status.VALIDATION_ERROR, "", null, 0,
                        new long[] {3_000_000, 1_500_000}, 1));
        assertThat(MaskBench.tailList(outcomes)).isEqualTo("c.json\t2\t2\t3000\na.json\t3\t1\t1000\n");
    }

    @Test
    void scoresTheSampleAsMaskBenchDoes() throws Exception {
        List<Path> files = MaskBench.files(SAMPLE, "", Integer.MAX_VALUE);
        assertThat(files).hasSize(27);
        ByteArrayOutputStream progress = new ByteArrayOutputStream();
        List<MaskBench.Outcome> outcomes = MaskBench.runAll(files, engine, 60_000,
                new PrintStream(progress, true, StandardCharsets.UTF_8));

        Map<MaskBench.Status, Long> byStatus = outcomes.stream()
                .collect(Collectors.groupingBy(MaskBench.Outcome::status, Collectors.counting()));
        assertThat(byStatus).containsExactlyInAnyOrderEntriesOf(Map.of(
                MaskBench.Status.PASSING, 24L, MaskBench.Status.COMPILE_ERROR, 1L,
                MaskBench.Status.VALIDATION_ERROR, 2L));
        assertThat(outcomes.stream().filter(o -> o.status() == MaskBench.Status.COMPILE_ERROR)
                .collect(Collectors.toMap(MaskBench.Outcome::id, MaskBench.Outcome::keyword)))
                .containsExactlyInAnyOrderEntriesOf(Map.of(
                        "Handwritten---dep3.json", "dependencies"));

        String table = MaskBench.table(outcomes, "tqserve");
        assertThat(table.lines().map(l -> l.split("\\|")[1].strip()).toList()).containsExactly("metric",
                ":-------------------", "TBM avg", "TBM p25", "TBM p50", "TBM p75", "TBM p90", "TBM p95", "TBM p99",
                "TBM p99.9", "TBM p100", "TTFM avg", "TTFM p25", "TTFM p50", "TTFM p75", "TTFM p90", "TTFM p95",
                "TTFM p99", "TTFM p99.9", "TTFM p100", "tokens", "schemas", "passing", "compile error", "timeout",
                "out of memory", "stack overflow", "validation error", "invalidation error");
        assertThat(table).contains("| schemas            |").containsPattern("\\| passing +\\| +24 \\|")
                .containsPattern("\\| compile error +\\| +1 \\|")
                .containsPattern("\\| validation error +\\| +2 \\|")
                .containsPattern("\\| invalidation error +\\| +0 \\|");
        long tokens = outcomes.stream().mapToLong(o -> o.maskNs().length).sum();
        assertThat(tokens).isPositive();
        assertThat(table).containsPattern("\\| tokens +\\| +" + String.format("%,d", tokens) + " \\|");
        assertThat(MaskBench.keywordTally(outcomes)).isEqualTo("""
                | compile errors by keyword | schemas |
                |:--|--:|
                | dependencies | 1 |
                """);
        // validation errors: the enum's object value is written compactly, the instance with json.dumps' spaces
        assertThat(MaskBench.failureList(outcomes).lines().toList()).hasSize(3)
                .filteredOn(l -> l.split("\t")[1].equals("compile error")).hasSize(1);
        assertThat(progress.toString(StandardCharsets.UTF_8)).contains("27/27 schemas");
    }

    @Test
    void aValidInstanceTheConstraintRejectsIsAValidationErrorAndAnAcceptedInvalidOneAnInvalidationError()
            throws Exception {
        Path dir = java.nio.file.Files.createTempDirectory("maskbench");
        // a valid instance whose value breaks the schema's type (marked valid): rejected -> validation error;
        // an invalid-marked instance that satisfies the schema: accepted -> invalidation error
        java.nio.file.Files.writeString(dir.resolve("a.json"), """
                {"schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
                  "additionalProperties": false},
                 "tests": [{"valid": true, "data": {"n": "x"}}]}""");
        java.nio.file.Files.writeString(dir.resolve("b.json"), """
                {"schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
                  "additionalProperties": false},
                 "tests": [{"valid": true, "data": {"n": 1}}, {"valid": false, "data": {"n": 2}}]}""");
        List<MaskBench.Outcome> o = MaskBench.runAll(MaskBench.files(dir, "", 10), engine, 60_000,
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
        assertThat(o).extracting(MaskBench.Outcome::status).containsExactly(MaskBench.Status.VALIDATION_ERROR,
                MaskBench.Status.INVALIDATION_ERROR);
        assertThat(o.get(0).detail()).startsWith("test #0: should accept but didn't (token ");
        assertThat(o.get(1).detail()).isEqualTo("test #1: should reject but didn't: {\"n\": 2}");
    }

    @Test
    void excludedSchemasAreReadOneALineWithComments() throws Exception {
        Path f = java.nio.file.Files.createTempFile("exclude", ".txt");
        java.nio.file.Files.writeString(f, "# masks that do not stop\nGithub_easy---o1\n\nGithub_easy---o2.json  # why\n");
        assertThat(MaskBench.excluded(f.toString())).containsExactlyInAnyOrder("Github_easy---o1.json",
                "Github_easy---o2.json");
        assertThat(MaskBench.excluded(null)).isEmpty();
    }

    @Test
    void percentilesFollowMaskBenchsIndexRule() {
        long[] v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
        assertThat(MaskBench.percentile(v, 50)).isEqualTo(6); // int(10 * 0.5) = 5 -> sixth value
        assertThat(MaskBench.percentile(v, 99.9)).isEqualTo(10);
        assertThat(MaskBench.percentile(v, 100)).isEqualTo(10);
        assertThat(MaskBench.percentile(v, 25)).isEqualTo(3);
    }

    @Test
    void theTokenizerIsAFolderOrItsTokenizerJson() {
        Path dir = Path.of(TqserveMain.DEFAULT_MODEL);
        assertThat(MaskBench.tokenizerDir(dir.resolve("tokenizer.json"))).isEqualTo(dir.toAbsolutePath());
        assertThat(MaskBench.tokenizerDir(dir)).isEqualTo(dir);
        Function<Path, String> error = p -> {
            try {
                MaskBench.tokenizerDir(p);
                return "";
            } catch (IllegalArgumentException e) {
                return e.getMessage();
            }
        };
        assertThat(error.apply(dir.resolve("config.json"))).startsWith("--tokenizer: expected a tokenizer.json");
        assertThat(error.apply(Path.of("src"))).startsWith("--tokenizer: no tokenizer.json in");
    }
}
