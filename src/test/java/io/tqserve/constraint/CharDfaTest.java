package io.tqserve.constraint;

import static org.assertj.core.api.Assertions.assertThat;

import dk.brics.automaton.Automaton;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The array-based constructions against dk.brics' own: {@link CharDfa#minimal} against dk.brics' Hopcroft (the
 * same language and as many states), and a string's contents through {@link ByteNfa#minimalDfa} against the same
 * byte automaton as dk.brics states through the lexeme construction that takes those (the same automaton up to
 * the numbering of its states).
 */
class CharDfaTest {
    private static final List<String> PATTERNS = List.of("^[a-z]+$", "^(?:\\S+\\s+){0,9}\\S+$", "^[a-zA-Z0-9\\W]*$",
            "^\\d{3}-\\d{4}$", "ab|cd|abc", "^(foo|bar)?[é-ü]{2,4}$", "x", "^$", "^[^\"\\\\]{1,3}$",
            "^u?int(8|16|24|32|256)?(\\[[0-9]*\\])?$", "[\\u4e00-\\u9fff]+");

    private static void sameAsBrics(Automaton a) {
        Automaton ours = CharDfa.minimal(a);
        Automaton theirs = a.clone();
        theirs.minimize();
        assertThat(ours.isDeterministic()).isTrue();
        assertThat(ours.equals(theirs)).as("same language").isTrue();
        assertThat(ours.getNumberOfStates()).isEqualTo(theirs.getNumberOfStates());
    }

    @Test
    void minimalAutomataOfPatternsAndTheirProductsMatchDkBrics() {
        Automaton names = EcmaRegex.anyString().minus(Automaton.makeStringUnion("id", "name", "ide", "日本"));
        for (String p : PATTERNS) {
            Automaton search = CharNfa.determinize(EcmaRegex.anyString().concatenate(
                    Automaton.makeString(p.replaceAll("[^a-z]", ""))), 5000, "test", "pattern");
            sameAsBrics(search);
            Automaton pattern = EcmaRegex.search(p, 5000);
            sameAsBrics(names.intersection(pattern));
            sameAsBrics(names.minus(pattern));
        }
        sameAsBrics(names);
        sameAsBrics(Automaton.makeEmpty());
        sameAsBrics(Automaton.makeEmptyString());
        sameAsBrics(Automaton.makeString("abc").union(Automaton.makeString("abd"))); // not deterministic
    }

    @Test
    void stringContentsThroughArraysMatchTheDkBricsPath() {
        for (String p : PATTERNS) {
            Automaton chars = EcmaRegex.search(p, 5000);
            ByteNfa nfa = JsonStringContent.nfa(chars, 80_000, "the pattern", "pattern");
            Lexeme viaArrays = JsonLexemes.of("pattern", nfa, 5000, "pattern");
            Lexeme viaBrics = JsonLexemes.of("pattern", nfa.toAutomaton(), 5000, "pattern");
            assertThat(viaArrays.states()).as(p).isEqualTo(viaBrics.states());
            // the same automaton up to the numbering of states: walked side by side from the start
            int[] image = new int[viaArrays.states()];
            java.util.Arrays.fill(image, -1);
            java.util.ArrayDeque<Integer> work = new java.util.ArrayDeque<>(List.of(viaArrays.start()));
            image[viaArrays.start()] = viaBrics.start();
            while (!work.isEmpty()) {
                int s = work.poll();
                assertThat(viaArrays.accepting(s)).isEqualTo(viaBrics.accepting(image[s]));
                for (int b = 0; b < 256; b++) {
                    int x = viaArrays.step(s, b);
                    int y = viaBrics.step(image[s], b);
                    assertThat(x < 0).as("%s: state %d, byte %d", p, s, b).isEqualTo(y < 0);
                    if (x >= 0 && image[x] < 0) {
                        image[x] = y;
                        work.add(x);
                    } else if (x >= 0) {
                        assertThat(image[x]).as("%s: state %d, byte %d", p, s, b).isEqualTo(y);
                    }
                }
            }
        }
    }
}
