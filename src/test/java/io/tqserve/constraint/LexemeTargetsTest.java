package io.tqserve.constraint;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * {@link Lexeme#targets}, the graph the completion searches walk, against {@link Lexeme#step} byte by byte: the
 * same set of next states from every state, for each kind of lexeme that overrides it.
 */
class LexemeTargetsTest {
    private static void sameAsSteps(Lexeme x) {
        int[] out = new int[256];
        for (int s = 0; s < x.states(); s++) {
            TreeSet<Integer> steps = new TreeSet<>();
            for (int b = 0; b < 256; b++) {
                if (x.step(s, b) >= 0) {
                    steps.add(x.step(s, b));
                }
            }
            TreeSet<Integer> targets = new TreeSet<>();
            int k = x.targets(s, out);
            for (int i = 0; i < k; i++) {
                targets.add(out[i]);
            }
            assertThat(targets).as("%s, state %d", x, s).isEqualTo(steps);
        }
    }

    @Test
    void everyLexemeKindWalksTheStepsGraph() {
        sameAsSteps(JsonLexemes.STRING_CHAR);
        sameAsSteps(JsonLexemes.WHITESPACE);
        sameAsSteps(ScalarSchemas.NUMBER_LEXEME);
        sameAsSteps(JsonLexemes.of("integer range", IntegerRanges.of(-250, 1_000_000), 5000, "minimum"));
        sameAsSteps(new Lexeme.Strings("enum", List.of(bytes("red"), bytes("green"), bytes("grey"), bytes("é"))));
        sameAsSteps(UndeclaredNames.except(List.of("a", "ab", "name", "é", "x\"y", "tab\t", "\u0001", "日本")));
        sameAsSteps(UndeclaredNames.OUTSIDE);
    }

    @Test
    void completionsOfUndeclaredNamesAvoidTheDeclaredOnes() {
        UndeclaredNames u = UndeclaredNames.except(List.of("", "a", "b"));
        byte[] c = u.completion(u.start());
        assertThat(new String(c, StandardCharsets.UTF_8)).isNotIn("", "a", "b").hasSize(1);
        assertThat(u.maxDistance()).isGreaterThan(0);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
