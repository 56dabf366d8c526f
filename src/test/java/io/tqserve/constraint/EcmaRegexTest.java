package io.tqserve.constraint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dk.brics.automaton.Automaton;
import dk.brics.automaton.RunAutomaton;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.SplittableRandom;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * JSON Schema {@code pattern}s as automata over the bytes of a JSON string's contents: search semantics,
 * anchors, escapes, classes, quantifiers; the JSON spelling of quotes, backslashes and control characters; UTF-8 of
 * non-ASCII characters; refusal of what is not a regular language or reads differently across validators.
 */
class EcmaRegexTest {
    private static RunAutomaton content(String pattern) {
        return new RunAutomaton(JsonStringContent.of(EcmaRegex.search(pattern, 100_000), 1_000_000, pattern,
                "pattern"));
    }

    /** Whether the JSON string contents {@code json} (as written between the quotes) are accepted. */
    private static boolean accepts(RunAutomaton a, String json) {
        byte[] b = json.getBytes(StandardCharsets.UTF_8);
        int s = a.getInitialState();
        for (byte x : b) {
            s = a.step(s, (char) (x & 0xFF));
            if (s < 0) {
                return false;
            }
        }
        return a.isAccept(s);
    }

    @Test
    void anchorsAndSearch() {
        RunAutomaton a = content("^[a-z]+$");
        assertThat(accepts(a, "abc")).isTrue();
        assertThat(accepts(a, "aBc")).isFalse();
        assertThat(accepts(a, "")).isFalse();
        RunAutomaton phone = content("\\d{3}-\\d{4}");
        assertThat(accepts(phone, "call 555-1234 now")).isTrue();
        assertThat(accepts(phone, "55-1234")).isFalse();
        RunAutomaton alt = content("^(foo|bar)$|^baz");
        assertThat(accepts(alt, "foo")).isTrue();
        assertThat(accepts(alt, "bazooka")).isTrue();
        assertThat(accepts(alt, "foox")).isFalse();
        assertThat(accepts(content("^a{$"), "a{")).isTrue();
        assertThat(accepts(content("^(?:ab){2,3}$"), "ababab")).isTrue();
        assertThat(accepts(content("^(?<x>ab)+?$"), "abab")).isTrue();
        assertThat(accepts(content("^(?:ab){2,3}$"), "ab")).isFalse();
    }

    @Test
    void jsonSpellingOfTheMatchedCharacters() {
        assertThat(accepts(content("^a\"b$"), "a\\\"b")).isTrue();
        assertThat(accepts(content("^a\"b$"), "a\"b")).isFalse();
        assertThat(accepts(content("^\\\\$"), "\\\\")).isTrue();
        assertThat(accepts(content("^\\t$"), "\\t")).isTrue();
        assertThat(accepts(content("^\\t$"), "\t")).isFalse();
        assertThat(accepts(content("^\\x01$"), "\\u0001")).isTrue();
        assertThat(accepts(content("^é.$"), "éx")).isTrue();
        assertThat(accepts(content("^é.$"), "é\\n")).isFalse();
        RunAutomaton notA = content("^[^a]$");
        assertThat(accepts(notA, "€")).isTrue();
        assertThat(accepts(notA, "ß")).isTrue();
        assertThat(accepts(notA, "\uFFFD")).isTrue();
        assertThat(accepts(notA, "😀")).isFalse(); // outside the BMP: never matched
        assertThat(accepts(notA, "a")).isFalse();
        assertThat(accepts(content("^[\\u4e00-\\u9fff]{2}$"), "東京")).isTrue();
        assertThat(accepts(content("^[\\u4e00-\\u9fff]{2}$"), "東")).isFalse();
    }

    @Test
    void narrowerReadingWhereValidatorsDisagree() {
        assertThat(accepts(content("^\\d$"), "٣")).isFalse(); // Python's \d matches Arabic-Indic digits, ECMA's not
        assertThat(accepts(content("^\\D$"), "٣")).isFalse(); // ECMA's \D matches it, Python's not
        assertThat(accepts(content("^\\W$"), "é")).isFalse();
        assertThat(accepts(content("^\\S$"), "\\u001f")).isFalse();
        assertThat(accepts(content("^\\s$"), " ")).isTrue();
        assertThat(accepts(content("^a$"), "a\\n")).isFalse(); // Python's $ also matches before a final newline
    }

    @Test
    void refusesWhatIsNotRegularOrNotUnderstood() {
        for (String p : List.of("(a)\\1", "(?=a)b", "(?!a)b", "(?<=a)b", "\\bword", "a^b", "a$b", "\\p{L}", "(a",
                "a)", "*a", "a**", "[b-a]", "\\u{1F600}", "x{2000}", "(?i)a", "\\k<n>")) {
            assertThatThrownBy(() -> EcmaRegex.search(p, 100_000)).as(p)
                    .isInstanceOfSatisfying(UnsupportedSchemaException.class,
                            e -> assertThat(e.keyword()).isEqualTo("pattern"));
        }
    }

    /**
     * MaskBench Github_easy---o21456 (jsonschemabench, maskbench/data): wide negated classes under a 254-character
     * bound. The UTF-8 expansion of its string automaton once went through dk.brics' unbounded, uninterruptible
     * determinization (inside minimize) and never finished; it now meets the bounded subset construction, which
     * refuses it naming {@code pattern} (a small state budget here keeps the test short; the server's default is
     * 5,000 states, 80,000 before minimisation, and its compile deadline interrupts the construction).
     */
    @Test
    void aWideClassUnderALongLengthBoundIsRefusedByItsStateBudget() {
        Automaton chars = EcmaRegex.search("^[^@^\\s]+@[^@^\\.^\\s]+(\\.[^@^\\.^\\s]*)*.gov.uk", 100_000)
                .intersection(EcmaRegex.lengths(5, 254));
        chars.minimize(); // a product of DFAs: Hopcroft only
        assertThatThrownBy(() -> JsonLexemes.of("pattern", JsonStringContent.of(chars, 8000, "the pattern",
                "pattern"), 500, "pattern"))
                .isInstanceOfSatisfying(ConstraintBudgetException.class, e -> assertThat(e.keyword())
                        .isEqualTo("pattern"))
                .hasMessageContaining("needs more than 8000 automaton states");
    }

    /**
     * MaskBench Github_hard---o79409 (jsonschemabench, maskbench/data): a class of about 700 Unicode ranges under
     * {@code {1,200}}. The class was a union of one automaton per range (two states each), so dk.brics' repetition,
     * which checks no budget and no interrupt, built about 280,000 states for 3.4 s of CPU before the state budget
     * refused them. A class is now two states, and the repetition is what its copies make.
     */
    @Test
    void aWideClassRepeatedIsTwoStatesACopy() {
        StringBuilder p = new StringBuilder("^[");
        for (char c = '\u0400'; c < '\u0400' + 1400; c += 2) {
            p.append(c); // 700 one-character ranges
        }
        p.append("]{1,200}$");
        Automaton a = EcmaRegex.search(p.toString(), 5000);
        assertThat(a.getNumberOfStates()).isLessThanOrEqualTo(2 * 201);
        assertThat(a.run("\u0400".repeat(200))).isTrue();
        assertThat(a.run("\u0400".repeat(201))).isFalse();
        assertThat(a.run("\u0400\u0402\u0401")).isFalse();
    }

    /** A repetition whose copies would pass the state budget is refused before dk.brics builds one copy. */
    @Test
    void aRepetitionBeyondTheStateBudgetIsRefusedBeforeItIsBuilt() {
        assertThatThrownBy(() -> EcmaRegex.search("^(?:abcdefghij|klmnopqrst){1,1000}$", 5000))
                .isInstanceOfSatisfying(ConstraintBudgetException.class, e -> assertThat(e.keyword())
                        .isEqualTo("pattern"))
                .hasMessageContaining("1000 times (more than 5000 states)");
    }

    /** Against java.util.regex (which reads these ASCII patterns as ECMA does) on random strings. */
    @Test
    void agreesWithJavaRegexOnRandomStrings() {
        String alphabet = "ab1 -_.@Zé€\"\\";
        SplittableRandom r = new SplittableRandom(29);
        for (String p : List.of("^[a-z0-9._-]+@[a-z]+\\.[a-z]{2,3}$", "a.b", "^(ab|b)*1?$", "[^ab]{2}",
                "^\\w+( \\w+)*$", "^[A-Z][a-z]*$", "^\\S*$", "^(?:\\d{1,2}|Z)-?$", "é|€", "^[\\\\\"]+$",
                "^.{0,3}$", "b{2,}", "^$", "^a?b+$")) {
            RunAutomaton a = content(p);
            Pattern j = Pattern.compile(p);
            for (int n = 0; n < 3000; n++) {
                StringBuilder s = new StringBuilder();
                int len = r.nextInt(7);
                for (int k = 0; k < len; k++) {
                    s.append(alphabet.charAt(r.nextInt(alphabet.length())));
                }
                String json = s.toString().replace("\\", "\\\\").replace("\"", "\\\"");
                assertThat(accepts(a, json)).as("/%s/ on %s", p, s).isEqualTo(j.matcher(s).find());
            }
        }
    }
}
