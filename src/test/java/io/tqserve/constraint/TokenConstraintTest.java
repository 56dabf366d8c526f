package io.tqserve.constraint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.networknt.schema.InputFormat;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

/**
 * The guarantee, without a model: random walks through the token masks (every allowed token equally likely, the
 * worst case for a budget) always end in a document that parses and validates, within the token budget.
 */
class TokenConstraintTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String SCHEMA = """
            {"type": "object", "properties": {
              "name": {"type": "string", "maxLength": 12},
              "age": {"type": "integer", "minimum": 0, "maximum": 150},
              "score": {"type": "number", "minimum": 0, "maximum": 10},
              "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b\\"c", "é"]}, "maxItems": 3},
              "address": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": ["string", "null"]}},
                          "required": ["city"], "additionalProperties": false},
              "kind": {"anyOf": [{"const": 1}, {"type": "boolean"}]},
              "id": {"type": "string", "format": "uuid"},
              "x": {"$ref": "#/$defs/point"}},
             "required": ["name", "age", "tags", "address"], "additionalProperties": false,
             "$defs": {"point": {"type": "array", "items": {"type": "integer", "format": "int32"}, "minItems": 1}}}
            """;
    static final int EOS = 300;

    /** Every byte, plus multi-byte pieces a BPE vocabulary would have; one id with no bytes as EOS. */
    static Vocabulary vocabulary() {
        List<byte[]> t = new ArrayList<>();
        for (int b = 0; b < 256; b++) {
            t.add(new byte[] {(byte) b});
        }
        for (String s : List.of("{\"", "\":", "\": ", "\", \"", "name", "age", "tags", "true", "null", "12", "345",
                "é", "\"}", "}}", "[\"", "\"]", ", ", "abc", " the", "\\n", "\\u00", "ity", "address", "city")) {
            t.add(s.getBytes(StandardCharsets.UTF_8));
        }
        while (t.size() < EOS) {
            t.add(("w" + t.size()).getBytes(StandardCharsets.UTF_8));
        }
        t.add(null);
        return new Vocabulary(t.toArray(byte[][]::new));
    }

    static String walk(TokenConstraint c, SplittableRandom r, int budget) {
        ConstraintState st = new ConstraintState(c, new int[] {EOS}, -1);
        StringBuilder bytes = new StringBuilder();
        float[] x = new float[EOS + 1];
        for (int used = 0; used < budget; used++) {
            Arrays.fill(x, 0f);
            st.mask(x, budget - used);
            List<Integer> allowed = new ArrayList<>();
            for (int i = 0; i < x.length; i++) {
                if (x[i] != Float.NEGATIVE_INFINITY) {
                    allowed.add(i);
                }
            }
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
    void randomWalksAlwaysProduceValidDocumentsWithinTheBudget() throws Exception {
        Map<?, ?> schema = JSON.readValue(SCHEMA, Map.class);
        TokenConstraint c = new TokenConstraint(SchemaCompiler.compile(schema), vocabulary());
        Schema validator = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12)
                .getSchema(SCHEMA, InputFormat.JSON);
        SplittableRandom r = new SplittableRandom(7);
        int min = c.minTokens();
        assertThat(min).isBetween(10, 120);
        for (int i = 0; i < 300; i++) {
            int budget = min + r.nextInt(0, 120);
            String doc = walk(c, r, budget);
            assertThat(validator.validate(doc, InputFormat.JSON)).as(doc).isEmpty();
            JSON.readTree(doc);
        }
        assertThat(c.vocabulary().sharedMasks.size()).isPositive();
    }

    @Test
    void wideConfigurationsInOneStateShareTheirWalkAndMaskAsTheExactWalk() {
        // alternatives that share a string member: after {"a": " several configurations are in one string state with
        // different continuations; they take one entry and one walk of their exits together, with the same masks as
        // the exact walk at every budget
        String schema = """
                {"anyOf": [
                  {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
                   "required": ["a", "b"], "additionalProperties": false},
                  {"type": "object", "properties": {"a": {"type": "string"}, "c": {"type": "boolean"}},
                   "required": ["a", "c"], "additionalProperties": false},
                  {"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}},
                   "required": ["a"], "additionalProperties": false},
                  {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
                   "additionalProperties": false}]}""";
        Vocabulary v = vocabulary();
        TokenConstraint c = new TokenConstraint(SchemaCompiler.compile(GrammarEngineTest.schema(schema)), v);
        SplittableRandom r = new SplittableRandom(11);
        int compared = 0;
        int[] grouped = {0};
        for (int w = 0; w < 30; w++) {
            Parser.Config[] cs = c.parser().step(c.initial(), "{\"a\": \"".getBytes(StandardCharsets.UTF_8));
            compared += GrammarEngineTest.compareOnRandomWalk(c, cs, 4 + r.nextInt(0, 30), r, at -> {
                java.util.Set<String> states = new java.util.HashSet<>();
                for (Parser.Config x : at) {
                    if (x.leaf instanceof Grammar.Lex l && l.lexeme.wide
                            && !states.add(l.lexeme + " " + l.max + " " + x.pos + " " + x.count)) {
                        grouped[0]++;
                    }
                }
            }, 3, 1_000_000);
        }
        assertThat(compared).isGreaterThan(200);
        assertThat(grouped[0]).isGreaterThan(20);
    }

    @Test
    void freeJsonObjectsAreObjectsAndParse() {
        TokenConstraint c = new TokenConstraint(SchemaCompiler.anyObject(ConstraintLimits.DEFAULT), vocabulary());
        SplittableRandom r = new SplittableRandom(3);
        for (int i = 0; i < 200; i++) {
            String doc = walk(c, r, 2 + r.nextInt(0, 60));
            assertThat(JSON.readTree(doc).isObject()).as(doc).isTrue();
        }
    }

    @Test
    void unsupportedKeywordsAreNamed() {
        // pattern is enforced now (EcmaRegex); uniqueItems is not a regular constraint
        assertThatThrownBy(() -> SchemaCompiler.compile(Map.of("type", "array", "uniqueItems", true)))
                .isInstanceOf(UnsupportedSchemaException.class).hasMessageContaining("uniqueItems")
                .extracting(e -> ((UnsupportedSchemaException) e).keyword()).isEqualTo("uniqueItems");
        // recursion is fine; a rule reaching itself before any output is not
        assertThatThrownBy(() -> SchemaCompiler.compile(Map.of("anyOf", List.of(Map.of("$ref", "#"),
                Map.of("type", "null")))))
                .isInstanceOf(UnsupportedSchemaException.class).hasMessageContaining("left recursion")
                .extracting(e -> ((UnsupportedSchemaException) e).keyword()).isEqualTo("$ref");
        assertThatThrownBy(() -> SchemaCompiler.compile(Map.of("oneOf", List.of(Map.of("type", "string"),
                Map.of("type", "string"))))).hasMessageContaining("no JSON document satisfies the schema");
    }

    @Test
    void integerRangesAreExact() {
        var a = Scalars.integerRange(-12, 105);
        for (int v = -30; v <= 130; v++) {
            assertThat(a.run(Integer.toString(v))).as("%d", v).isEqualTo(v >= -12 && v <= 105);
        }
        assertThat(a.run("007")).isFalse();
        assertThat(a.run("-0")).isFalse();
    }
}
