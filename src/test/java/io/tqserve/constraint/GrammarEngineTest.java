package io.tqserve.constraint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.networknt.schema.InputFormat;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import io.tqserve.constraint.Parser.Config;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

/**
 * The lazy grammar engine without a model: what the parser accepts and rejects byte by byte, counters that cost
 * no states, recursion, optional members, the closing budget (random walks with tiny budgets always finish), the
 * cached mask path against the exact trie walk, and the schemas that used to blow up the automaton compiler.
 */
class GrammarEngineTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final int EOS = TokenConstraintTest.EOS;

    static Map<?, ?> schema(String json) {
        return JSON.readValue(json, Map.class);
    }

    static boolean accepts(Grammar g, String text) {
        Parser p = new Parser(ConstraintLimits.DEFAULT);
        Config[] cs = p.start(g.root);
        cs = p.step(cs, text.getBytes(StandardCharsets.UTF_8));
        return cs.length > 0 && p.accepting(cs);
    }

    static boolean accepts(String schema, String text) {
        return accepts(SchemaCompiler.compile(schema(schema)), text);
    }

    static Schema validator(String schema) {
        return SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12).getSchema(schema,
                InputFormat.JSON);
    }

    /** Every valid document accepted and every invalid one rejected, each expectation confirmed by the validator. */
    static void check(String schema, List<String> valid, List<String> invalid) {
        for (String ok : valid) {
            assertThat(validator(schema).validate(ok, InputFormat.JSON)).as("validator on %s", ok).isEmpty();
            assertThat(accepts(schema, ok)).as("%s on %s", schema, ok).isTrue();
        }
        for (String bad : invalid) {
            assertThat(validator(schema).validate(bad, InputFormat.JSON)).as("validator on %s", bad).isNotEmpty();
            assertThat(accepts(schema, bad)).as("%s on %s", schema, bad).isFalse();
        }
    }

    static final String PERSON = """
            {"type": "object", "properties": {
              "name": {"type": "string", "minLength": 1, "maxLength": 5},
              "age": {"type": "integer", "minimum": 0, "maximum": 150},
              "score": {"type": "number"},
              "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
              "ok": {"type": ["boolean", "null"]}},
             "required": ["name", "age"], "additionalProperties": false}""";

    @Test
    void acceptsExactlyTheValidDocumentsByteByByte() {
        // Python's json.dumps separators, compact ones, pretty-printed whitespace, escapes and non-ASCII
        for (String ok : List.of("{\"name\": \"Ann\", \"age\": 30}", "{\"name\":\"Ann\",\"age\":30}",
                "{\n  \"name\": \"\\u00e9t\\n\",\n  \"age\": 0,\n  \"score\": -1.5e-05\n}",
                "{\"name\": \"Zoë\", \"age\": 150, \"tags\": [\"a\", \"b\"], \"ok\": null}",
                "{\"name\": \"x\", \"age\": 1, \"ok\": true}", "{\"name\": \"\u6771\u4eac\", \"age\": 1, \"tags\": []}",
                "{\"age\": 3, \"name\": \"Ann\"}")) {
            assertThat(accepts(PERSON, ok)).as(ok).isTrue();
            assertThat(validator(PERSON).validate(ok, InputFormat.JSON)).as(ok).isEmpty();
        }
        for (String bad : List.of("{\"name\": \"Ann\"}", "{\"age\": 3}",
                "{\"name\": \"\", \"age\": 30}", "{\"name\": \"Annabel\", \"age\": 30}",
                "{\"name\": \"Ann\", \"age\": 151}", "{\"name\": \"Ann\", \"age\": 30,}",
                "{\"name\": \"Ann\", \"age\": 30, \"x\": 1}", "{\"name\": \"Ann\", \"age\": 30, \"tags\": [1]}",
                "{\"name\": \"Ann\", \"age\": 30, \"tags\": [\"a\", \"b\", \"c\"]}", "{\"name\": \"A\\ud800\", \"age\": 1}",
                "{\"name\": \"Ann\", \"age\": 030}", " {\"name\": \"Ann\", \"age\": 30}",
                "{\"name\": \"Ann\", \"age\": 30, \"age\": 30}", "{\"name\": \"A\u0001\", \"age\": 1}")) {
            assertThat(accepts(PERSON, bad)).as(bad).isFalse();
        }
    }

    @Test
    void countersAreCountersNotStates() {
        Grammar s = SchemaCompiler.compile(schema("{\"type\": \"string\", \"maxLength\": 10000}"));
        assertThat(s.nodes()).isLessThan(10);
        assertThat(accepts(s, "\"" + "a".repeat(10_000) + "\"")).isTrue();
        assertThat(accepts(s, "\"" + "é".repeat(10_000) + "\"")).isTrue();
        assertThat(accepts(s, "\"" + "a".repeat(10_001) + "\"")).isFalse();
        Grammar min = SchemaCompiler.compile(schema("{\"type\": \"string\", \"minLength\": 3}"));
        assertThat(accepts(min, "\"ab\"")).isFalse();
        assertThat(accepts(min, "\"a\\\"c\"")).isTrue();
        Grammar a = SchemaCompiler.compile(schema("{\"type\": \"array\", \"items\": {\"type\": \"integer\"},"
                + " \"minItems\": 2, \"maxItems\": 20000}"));
        assertThat(a.nodes()).isLessThan(20);
        String[] zeros = new String[20_000];
        Arrays.fill(zeros, "0");
        assertThat(accepts(a, "[" + String.join(", ", zeros) + "]")).isTrue();
        assertThat(accepts(a, "[" + String.join(",", zeros) + ",1]")).isFalse();
        assertThat(accepts(a, "[7]")).isFalse();
        assertThat(accepts(a, "[7,8]")).isTrue();
    }

    static final String TREE = """
            {"$defs": {"node": {"type": "object", "properties": {
                "v": {"type": "integer"},
                "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 3}},
              "required": ["v"], "additionalProperties": false}},
             "$ref": "#/$defs/node"}""";

    @Test
    void recursiveReferencesAreContextFree() {
        Grammar g = SchemaCompiler.compile(schema(TREE));
        assertThat(accepts(g, "{\"v\": 1, \"kids\": [{\"v\": 2, \"kids\": [{\"v\": 3}]}, {\"v\": 4, \"kids\": []}]}"))
                .isTrue();
        String deep = "{\"v\": 0}";
        for (int i = 0; i < 200; i++) {
            deep = "{\"v\": " + i + ", \"kids\": [" + deep + "]}";
        }
        assertThat(accepts(g, deep)).isTrue();
        assertThat(accepts(g, "{\"v\": 1, \"kids\": [{\"kids\": []}]}")).isFalse();
        assertThat(accepts(g, "{\"v\": 1, \"kids\": [{\"v\": 1}, {\"v\": 1}, {\"v\": 1}, {\"v\": 1}]}")).isFalse();
        // a rule that reaches itself before any output is refused, naming $ref
        assertThatThrownBy(() -> SchemaCompiler.compile(schema(
                "{\"$defs\": {\"a\": {\"anyOf\": [{\"$ref\": \"#/$defs/a\"}, {\"type\": \"null\"}]}},"
                        + " \"$ref\": \"#/$defs/a\"}")))
                .isInstanceOf(UnsupportedSchemaException.class)
                .extracting(e -> ((UnsupportedSchemaException) e).keyword()).isEqualTo("$ref");
        // recursion without a way out has no finite document
        assertThatThrownBy(() -> SchemaCompiler.compile(schema("{\"type\": \"object\", \"properties\": {\"a\": "
                + "{\"$ref\": \"#\"}}, \"required\": [\"a\"]}"))).hasMessageContaining("no JSON document");
    }

    @Test
    void optionalPropertiesAreLinearInAnyOrderOnceEach() {
        Map<String, Object> props = new LinkedHashMap<>();
        for (int i = 0; i < 12; i++) {
            props.put("p" + i, Map.of("type", "object"));
        }
        Grammar g = SchemaCompiler.compile(Map.of("type", "object", "properties", props));
        assertThat(g.nodes()).isLessThan(400); // linear: some 25 nodes a member (its undeclared tail included)
        assertThat(accepts(g, "{}")).isTrue();
        assertThat(accepts(g, "{\"p3\": {}, \"p11\": {\"x\": [1, {\"y\": null}]}}")).isTrue();
        assertThat(accepts(g, "{\"p0\": {}, \"p1\": {}, \"p2\": {}, \"p3\": {}, \"p4\": {}, \"p5\": {}, \"p6\": {}, "
                + "\"p7\": {}, \"p8\": {}, \"p9\": {}, \"p10\": {}, \"p11\": {}}")).isTrue();
        assertThat(accepts(g, "{\"p11\": {}, \"p3\": {}}")).isTrue();
        assertThat(accepts(g, "{\"p3\": {}, \"p3\": {}}")).isFalse();
        assertThat(accepts(g, "{\"p3\": 1}")).isFalse();
    }

    /** A random walk through the masks at temperature 1 (every allowed token equally likely) within a budget. */
    static String walk(TokenConstraint c, SplittableRandom r, int budget) {
        ConstraintState st = new ConstraintState(c, new int[] {EOS}, -1);
        StringBuilder bytes = new StringBuilder();
        for (int used = 0; used < budget; used++) {
            long[] m = st.allowed(budget - used);
            List<Integer> allowed = new ArrayList<>();
            for (int i = 0; i <= EOS; i++) {
                if ((m[i >>> 6] & (1L << i)) != 0) {
                    allowed.add(i);
                }
            }
            assertThat(allowed).as("a token to choose after %s", bytes).isNotEmpty();
            int tok = allowed.get(r.nextInt(allowed.size()));
            if (tok == EOS) {
                break;
            }
            st.advance(tok);
            bytes.append(new String(c.vocabulary().bytes(tok), StandardCharsets.ISO_8859_1));
        }
        assertThat(st.accepting()).as("accepting at the end of %s", bytes).isTrue();
        return new String(bytes.toString().getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.UTF_8);
    }

    @Test
    void tinyBudgetsAlwaysFinishWithValidDocuments() {
        Vocabulary v = TokenConstraintTest.vocabulary();
        for (String s : List.of(PERSON, TREE, TokenConstraintTest.SCHEMA,
                "{\"type\": \"array\", \"items\": {\"type\": \"string\", \"minLength\": 4}, \"minItems\": 3}")) {
            TokenConstraint c = new TokenConstraint(SchemaCompiler.compile(schema(s)), v);
            Schema validator = validator(s);
            SplittableRandom r = new SplittableRandom(11);
            for (int i = 0; i < 150; i++) {
                int budget = c.minTokens() + r.nextInt(0, 6);
                String doc = walk(c, r, budget);
                assertThat(validator.validate(doc, InputFormat.JSON)).as(doc).isEmpty();
            }
        }
    }

    @Test
    void cachedMasksEqualTheExactWalk() {
        Vocabulary v = TokenConstraintTest.vocabulary();
        for (String s : List.of(PERSON, TREE, TokenConstraintTest.SCHEMA)) {
            TokenConstraint c = new TokenConstraint(SchemaCompiler.compile(schema(s)), v);
            SplittableRandom r = new SplittableRandom(5);
            int compared = 0;
            for (int w = 0; w < 40; w++) {
                compared += compareOnRandomWalk(c, c.initial(), c.minTokens() + r.nextInt(0, 40), r, cs -> { },
                        1_000_000);
            }
            assertThat(compared).isGreaterThan(200);
        }
    }

    /**
     * One random walk through the exact masks from {@code cs} for up to {@code budget} tokens: at every state the
     * cached masks are compared with the exact walk's at the budget left and at each of {@code budgets}, and
     * {@code seen} is shown the state. Returns the masks compared.
     */
    static int compareOnRandomWalk(TokenConstraint c, Config[] cs, int budget, SplittableRandom r,
            java.util.function.Consumer<Config[]> seen, int... budgets) {
        int compared = 0;
        for (int step = 0; step < budget && cs.length > 0; step++) {
            seen.accept(cs);
            int left = budget - step - 1;
            for (int b : java.util.stream.IntStream.concat(java.util.stream.IntStream.of(left),
                    java.util.Arrays.stream(budgets)).toArray()) {
                assertThat(c.allowed(cs, b, false)).as("%s budget %d", Parser.describe(cs), b)
                        .isEqualTo(c.allowed(cs, b, true));
                compared++;
            }
            long[] m = c.allowed(cs, left, true);
            List<Integer> allowed = new ArrayList<>();
            for (int i = 0; i < c.vocabulary().size(); i++) {
                if ((m[i >>> 6] & (1L << i)) != 0) {
                    allowed.add(i);
                }
            }
            if (allowed.isEmpty()) {
                break;
            }
            cs = c.parser().step(cs, c.vocabulary().bytes(allowed.get(r.nextInt(allowed.size()))));
        }
        return compared;
    }

    /** Compares the cached masks with the exact walk's at every byte of the documents, at each budget. */
    static int compareAlongDocuments(TokenConstraint c, List<String> docs, int... budgets) {
        int compared = 0;
        for (String doc : docs) {
            Config[] cs = c.initial();
            for (byte b : doc.getBytes(java.nio.charset.StandardCharsets.UTF_8)) {
                for (int budget : budgets) {
                    assertThat(c.allowed(cs, budget, false)).as("%s budget %d", Parser.describe(cs), budget)
                            .isEqualTo(c.allowed(cs, budget, true));
                    compared++;
                }
                cs = c.parser().step(cs, new byte[] {b});
                assertThat(cs).as(doc).isNotEmpty();
            }
            assertThat(c.parser().accepting(cs)).as(doc).isTrue();
        }
        return compared;
    }

    @Test
    void attackSchemasCompileFastInSmallMemoryOrAreRefusedNamingTheKeyword() {
        Vocabulary v = TokenConstraintTest.vocabulary();
        Map<String, Object> fan = new LinkedHashMap<>();
        for (int i = 0; i < 10; i++) {
            String next = i == 9 ? "{\"type\": \"string\"}" : "{\"$ref\": \"#/$defs/l" + (i + 1) + "\"}";
            fan.put("l" + i, schema("{\"type\": \"object\", \"properties\": {\"a\": " + next + ", \"b\": " + next
                    + "}, \"required\": [\"a\", \"b\"]}"));
        }
        Map<String, Object> optional = new LinkedHashMap<>();
        for (int i = 0; i < 12; i++) {
            optional.put("p" + i, Map.of("type", "object"));
        }
        List<Object> values = new ArrayList<>();
        for (int i = 0; i < 20_000; i++) {
            values.add("value-" + i);
        }
        List<Object> attacks = List.of(
                schema("{\"type\": \"string\", \"maxLength\": 10000}"),
                schema("{\"type\": \"array\", \"items\": {\"type\": \"object\"}, \"maxItems\": 20000}"),
                Map.of("$defs", fan, "$ref", "#/$defs/l0"),
                Map.of("type", "object", "properties", optional),
                Map.of("enum", values));
        for (Object attack : attacks) { // load and compile the code paths before timing (CI machines are busy)
            new ConstraintState(new TokenConstraint(SchemaCompiler.compile(attack), v), new int[] {EOS}, -1)
                    .allowed(40);
        }
        for (Object attack : attacks) {
            long t0 = System.nanoTime();
            TokenConstraint c = new TokenConstraint(SchemaCompiler.compile(attack), v);
            ConstraintState first = new ConstraintState(c, new int[] {EOS}, -1);
            assertThat(first.allowed(c.minTokens() + 30)).isNotEqualTo(new long[(EOS + 64) / 64]);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertThat(ms).as("compile and the first mask of %s", attack.toString().substring(0, Math.min(40, attack.toString().length())))
                    .isLessThan(1_000);
            assertThat(c.bytes()).isLessThan(8L << 20);
            assertThat(c.grammar().nodes()).isLessThan(1_000);
            if (c.minTokens() < 200) {
                JSON.readTree(walk(c, new SplittableRandom(1), c.minTokens() + 30));
            }
        }
        // the 10-level fan-out's shortest document has 2^10 strings: within the closing budget, finishing it
        // takes thousands of tokens, which minTokens reports
        TokenConstraint fanOut = new TokenConstraint(SchemaCompiler.compile(Map.of("$defs", fan, "$ref",
                "#/$defs/l0")), v);
        assertThat(fanOut.minTokens()).isGreaterThan(1024);
        // beyond a budget: refused with the keyword
        ConstraintLimits small = new ConstraintLimits(50, 100, 1000, 8, 1 << 10, 8, 1 << 20, 1_000_000, 1_000);
        assertThatThrownBy(() -> SchemaCompiler.compile(Map.of("enum", values), small))
                .isInstanceOf(ConstraintBudgetException.class)
                .extracting(e -> ((UnsupportedSchemaException) e).keyword()).isEqualTo("enum");
        assertThatThrownBy(() -> new TokenConstraint(SchemaCompiler.compile(schema(
                "{\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"minItems\": 5000}"), small), v, small))
                .isInstanceOf(ConstraintBudgetException.class)
                .extracting(e -> ((UnsupportedSchemaException) e).keyword()).isEqualTo("minItems");
    }

    @Test
    void toolCallGrammarsComposeAndFreeTextNeverContainsTheMarker() {
        Grammar text = Grammar.seq(Grammar.textWithout("<tool_call>"),
                Grammar.seq(Grammar.literal("<tool_call>\n"), SchemaCompiler.compile(schema(PERSON)),
                        Grammar.literal("\n</tool_call>")).optional());
        assertThat(accepts(text, "hello <tool_ call> <tool")).isTrue();
        assertThat(accepts(text, "hi <tool_call>\n{\"name\": \"A\", \"age\": 1}\n</tool_call>")).isTrue();
        assertThat(accepts(text, "hi <tool_call>\n{\"name\": \"A\"}\n</tool_call>")).isFalse();
        assertThat(accepts(text, "hi <tool_call>\n{\"name\": \"A\", \"age\": 1}\n</tool_call> more")).isFalse();
    }
}
