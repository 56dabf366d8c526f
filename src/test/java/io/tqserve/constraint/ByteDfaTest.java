package io.tqserve.constraint;

import static org.assertj.core.api.Assertions.assertThat;

import dk.brics.automaton.Automaton;
import dk.brics.automaton.RegExp;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link ByteDfa}'s minimisation (through {@link JsonLexemes#of}) against dk.brics' own: on random regular
 * expressions over a few bytes, the same number of states (dk.brics' minimal automaton without its dead state) and
 * the same answer on every string of up to six bytes.
 */
class ByteDfaTest {
    private static final String ALPHABET = "abc\u00e9";

    private static String randomRegex(SplittableRandom r, int depth) {
        int pick = depth > 3 ? r.nextInt(2) : r.nextInt(7);
        return switch (pick) {
            case 0 -> String.valueOf(ALPHABET.charAt(r.nextInt(ALPHABET.length())));
            case 1 -> "[a-" + "bc".charAt(r.nextInt(2)) + "]";
            case 2 -> "(" + randomRegex(r, depth + 1) + "|" + randomRegex(r, depth + 1) + ")";
            case 3 -> "(" + randomRegex(r, depth + 1) + ")*";
            case 4 -> "(" + randomRegex(r, depth + 1) + "){" + r.nextInt(3) + "," + (2 + r.nextInt(3)) + "}";
            case 5 -> "(" + randomRegex(r, depth + 1) + ")?";
            default -> randomRegex(r, depth + 1) + randomRegex(r, depth + 1);
        };
    }

    private static boolean accepts(Lexeme x, String s) {
        int state = x.start();
        for (int i = 0; i < s.length(); i++) {
            state = x.step(state, s.charAt(i));
            if (state < 0) {
                return false;
            }
        }
        return x.accepting(state);
    }

    @Test
    void sameMinimalAutomatonAsDkBrics() {
        SplittableRandom r = new SplittableRandom(29);
        for (int round = 0; round < 300; round++) {
            String re = randomRegex(r, 0);
            Automaton a = new RegExp(re, RegExp.NONE).toAutomaton();
            Lexeme x = JsonLexemes.of("test", a, 10_000, "pattern");
            Automaton m = a.clone();
            m.minimize();
            int brics = m.getNumberOfStates();
            boolean hasDead = m.getStates().stream().anyMatch(s -> !s.isAccept() && s.getTransitions().isEmpty()
                    && s != m.getInitialState());
            assertThat(x.states()).as(re).isEqualTo(hasDead ? brics - 1 : brics);
            for (String s : strings(6)) {
                assertThat(accepts(x, s)).as(re + " on " + s).isEqualTo(a.run(s));
            }
        }
    }

    @Test
    void emptyLanguageIsOneDeadState() {
        Lexeme x = JsonLexemes.of("none", Automaton.makeEmpty(), 10, "pattern");
        assertThat(x.states()).isEqualTo(1);
        assertThat(x.accepting(x.start())).isFalse();
        assertThat(x.step(x.start(), 'a')).isEqualTo(Lexeme.DEAD);
    }

    private static java.util.List<String> strings(int max) {
        java.util.List<String> out = new java.util.ArrayList<>();
        out.add("");
        int from = 0;
        for (int len = 1; len <= max; len++) {
            int to = out.size();
            for (int i = from; i < to; i++) {
                for (int c = 0; c < ALPHABET.length(); c++) {
                    out.add(out.get(i) + ALPHABET.charAt(c));
                }
            }
            from = to;
        }
        return out;
    }
}
