package io.tqserve.constraint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dk.brics.automaton.Automaton;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Numeric bounds and multipleOf against an exact oracle (BigDecimal): every accepted text is a JSON number that
 * satisfies the keywords, and every plain decimal text (no exponent, within the digit limits) that satisfies them
 * is accepted.
 */
class NumberRangesTest {
    private static final Pattern PLAIN = Pattern.compile("-?(0|[1-9][0-9]{0,18})(\\.[0-9]{1,20})?");
    private static final Pattern JSON_NUMBER = Pattern.compile("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?");

    private static Automaton number(String schema) {
        return NumberRanges.number(GrammarEngineTest.schema(schema), "#", 5000);
    }

    /** Whether the value satisfies the schema's numeric keywords (the oracle). */
    private static boolean satisfies(Map<?, ?> m, BigDecimal v) {
        for (Map.Entry<?, ?> e : m.entrySet()) {
            if (!(e.getValue() instanceof Number n)) {
                continue;
            }
            int cmp = v.compareTo(new BigDecimal(n.toString()));
            boolean ok = switch (String.valueOf(e.getKey())) {
                case "minimum" -> cmp >= 0;
                case "exclusiveMinimum" -> cmp > 0;
                case "maximum" -> cmp <= 0;
                case "exclusiveMaximum" -> cmp < 0;
                case "multipleOf" -> v.remainder(new BigDecimal(n.toString())).signum() == 0;
                default -> true;
            };
            if (!ok) {
                return false;
            }
        }
        return true;
    }

    /** Texts around the schema's constants: equal, just above and below, other spellings, other signs. */
    private static Set<String> candidates(Map<?, ?> m, SplittableRandom r) {
        Set<String> out = new LinkedHashSet<>(List.of("0", "-0", "0.0", "-0.0", "0.00", "1", "-1", "00", "01",
                "-01", "0.", ".5", "-", "1e2", "1E-2", "-0e0", "1.5e1", "9999999999999999999",
                "10000000000000000000", "-9999999999999999999", "0.00000000000000000001",
                "0.000000000000000000001", "123456789012345678.5"));
        List<BigDecimal> bases = new ArrayList<>(List.of(BigDecimal.ZERO, BigDecimal.ONE));
        m.values().forEach(v -> {
            if (v instanceof Number n) {
                bases.add(new BigDecimal(n.toString()));
            }
        });
        for (BigDecimal b : bases) {
            for (BigDecimal x : List.of(b, b.negate())) {
                out.add(x.toPlainString());
                out.add(x.stripTrailingZeros().toPlainString());
                out.add(x.setScale(Math.max(x.scale(), 0) + 2).toPlainString());
                for (int k = 0; k <= 6; k++) {
                    BigDecimal d = BigDecimal.ONE.movePointLeft(k);
                    out.add(x.add(d).toPlainString());
                    out.add(x.subtract(d).toPlainString());
                    out.add(x.add(d).stripTrailingZeros().toPlainString());
                    out.add(x.subtract(d).stripTrailingZeros().toPlainString());
                }
                out.add(x.toPlainString() + "e0");
            }
        }
        for (int i = 0; i < 400; i++) {
            BigDecimal base = bases.get(r.nextInt(bases.size()));
            BigDecimal d = new BigDecimal(r.nextInt(-2000, 2000)).movePointLeft(r.nextInt(0, 5));
            out.add(base.add(d).toPlainString());
            out.add(base.multiply(new BigDecimal(r.nextInt(-30, 30))).toPlainString());
        }
        return out;
    }

    private static void check(String schema) {
        Map<?, ?> m = GrammarEngineTest.schema(schema);
        Automaton a = number(schema);
        for (String t : candidates(m, new SplittableRandom(schema.hashCode()))) {
            String text = t;
            boolean accepted = a.run(text);
            boolean valid = JSON_NUMBER.matcher(text).matches() && satisfies(m, new BigDecimal(text));
            if (accepted) {
                assertThat(valid).as(schema + " accepts " + text).isTrue();
                assertThat(PLAIN.matcher(text).matches()).as(schema + " accepts " + text).isTrue();
            } else if (valid && PLAIN.matcher(text).matches()) {
                throw new AssertionError(schema + " rejects the valid " + text);
            }
        }
    }

    @Test
    void boundsAgreeWithTheOracle() {
        for (String s : List.of("{\"minimum\": 0}", "{\"exclusiveMinimum\": 0}", "{\"maximum\": 0}",
                "{\"exclusiveMaximum\": 0}", "{\"minimum\": -0.5}", "{\"minimum\": 0.5, \"maximum\": 1.25}",
                "{\"exclusiveMinimum\": -1.05, \"exclusiveMaximum\": 3.999}", "{\"minimum\": -180, \"maximum\": 180}",
                "{\"minimum\": 1e-7}", "{\"exclusiveMaximum\": -0.001}", "{\"maximum\": 99.9}",
                "{\"maximum\": 1e300}", "{\"minimum\": -1e300}",
                "{\"minimum\": 1e-30}", "{\"maximum\": 1e-30}", "{\"exclusiveMinimum\": 1e-30}",
                "{\"exclusiveMaximum\": -1e-30}", "{\"minimum\": 0.1, \"exclusiveMinimum\": 0.1}",
                "{\"minimum\": 9999999999999999999}", "{\"maximum\": 10.9, \"minimum\": 10.1}")) {
            check(s);
        }
    }

    @Test
    void multiplesAgreeWithTheOracle() {
        for (String s : List.of("{\"multipleOf\": 1}", "{\"multipleOf\": 7}", "{\"multipleOf\": 0.01}",
                "{\"multipleOf\": 0.5}", "{\"multipleOf\": 2.5}", "{\"multipleOf\": 0.25, \"minimum\": -1}",
                "{\"multipleOf\": 100}", "{\"multipleOf\": 1e-8}", "{\"multipleOf\": 0.01, \"minimum\": 0, "
                        + "\"exclusiveMaximum\": 100}", "{\"multipleOf\": 3, \"minimum\": -10, \"maximum\": 10}")) {
            check(s);
        }
    }

    @Test
    void boundaryValues() {
        Automaton a = number("{\"minimum\": 0.5, \"exclusiveMaximum\": 2}");
        assertThat(List.of("0.5", "0.50", "0.500001", "1", "1.99999", "1.0")).allMatch(a::run);
        assertThat(List.of("0.49999", "0.4", "2", "2.0", "2.00001", "-0.5", "5e-1", "00.5", "0.5.", "1.")).noneMatch(
                a::run);
        Automaton zero = number("{\"minimum\": 0}");
        assertThat(List.of("0", "-0", "-0.000", "0.0", "7")).allMatch(zero::run);
        assertThat(List.of("-0.001", "-1", "1e3")).noneMatch(zero::run);
        Automaton positive = number("{\"exclusiveMinimum\": 0}");
        assertThat(List.of("0", "-0", "0.00", "-0.0")).noneMatch(positive::run);
        assertThat(positive.run("0.00000000000000000001")).isTrue();
        Automaton cents = number("{\"multipleOf\": 0.01}");
        assertThat(List.of("1.25", "-0.1", "3", "3.000", "0.10")).allMatch(cents::run);
        assertThat(List.of("1.251", "0.001", "1.2501")).noneMatch(cents::run);
    }

    @Test
    void throughTheGrammar() {
        String schema = "{\"type\": \"object\", \"properties\": {\"p\": {\"type\": \"number\", \"minimum\": -2.5, "
                + "\"maximum\": 2.5, \"multipleOf\": 0.5}, \"n\": {\"type\": \"integer\", \"multipleOf\": 3}},"
                + " \"required\": [\"p\", \"n\"], \"additionalProperties\": false}";
        assertThat(GrammarEngineTest.accepts(schema, "{\"p\": -2.5, \"n\": -9}")).isTrue();
        assertThat(GrammarEngineTest.accepts(schema, "{\"p\": 1.0, \"n\": 0}")).isTrue();
        assertThat(GrammarEngineTest.accepts(schema, "{\"p\": 2.75, \"n\": 3}")).isFalse();
        assertThat(GrammarEngineTest.accepts(schema, "{\"p\": 1.25, \"n\": 3}")).isFalse();
        assertThat(GrammarEngineTest.accepts(schema, "{\"p\": 1, \"n\": 4}")).isFalse();
        assertThat(GrammarEngineTest.accepts("{\"multipleOf\": 2}", "4")).isTrue();
        assertThat(GrammarEngineTest.accepts("{\"multipleOf\": 2}", "3")).isFalse();
    }

    @Test
    void inexpressibleKeywordsAreNamed() {
        for (var e : Map.of("{\"type\": \"number\", \"multipleOf\": 0}", "multipleOf",
                "{\"type\": \"integer\", \"multipleOf\": 123456789}", "multipleOf",
                "{\"type\": \"number\", \"multipleOf\": 1e-5000}", "multipleOf",
                "{\"type\": \"number\", \"minimum\": 1e30}", "minimum",
                "{\"type\": \"number\", \"minimum\": 2, \"maximum\": 1}", "minimum").entrySet()) {
            assertThatThrownBy(() -> SchemaCompiler.compile(GrammarEngineTest.schema(e.getKey()))).as(e.getKey())
                    .isInstanceOfSatisfying(UnsupportedSchemaException.class,
                            x -> assertThat(x.keyword()).isEqualTo(e.getValue()));
        }
    }
}
