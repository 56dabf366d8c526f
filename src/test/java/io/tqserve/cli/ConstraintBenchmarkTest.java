package io.tqserve.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code ./tqserve bench constraint} as a user runs it, on the embedded model with two short rounds: it completes,
 * its stdout carries only the result lines (the mask cost beside the decode step), and the logs go to stderr.
 */
class ConstraintBenchmarkTest {
    @Test
    void printsTheMaskCostBesideTheDecodeStep() throws Exception {
        CliProcess p = CliProcess.run("bench", "constraint", "--rounds", "2", "--max-tokens", "64", "--threads", "2");
        assertThat(p.exit()).as(p.stderr()).isZero();
        List<String> lines = p.stdout().lines().toList();
        assertThat(lines).hasSize(5);
        assertThat(lines.get(0)).startsWith("backend: cpu:");
        assertThat(lines.get(1)).matches("vocabulary trie: [0-9.]+ ms \\(\\d+ tokens\\); schema -> grammar: [0-9.]+ ms "
                + "\\(\\d+ nodes, at least \\d+ tokens\\)");
        assertThat(lines.get(2)).matches("2 constrained completions, \\d+ decode steps: decode step [0-9.]+ us "
                + "unconstrained, [0-9.]+ us constrained \\([+-][0-9.]+%\\)");
        assertThat(lines.get(3)).matches("mask \\+ advance per token, warm lexeme masks: [0-9.]+ us = [0-9.]+% of a "
                + "decode step");
        assertThat(lines.get(4)).startsWith("first use of the schema: one completion's masks computed cold: ");
        assertThat(p.stderr()).doesNotContain("Exception");
    }
}
