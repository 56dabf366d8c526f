package io.tqserve.constraint;

import static io.tqserve.constraint.GrammarEngineTest.accepts;
import static io.tqserve.constraint.GrammarEngineTest.check;
import static io.tqserve.constraint.GrammarEngineTest.schema;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The object keywords of {@link ObjectSchemas}: patternProperties (name classes, conjunctions with properties,
 * escaped names), propertyNames, minProperties/maxProperties and dependencies. Every expectation but draft 7's
 * {@code dependencies} is checked against a draft 2020-12 validator as well.
 */
class ObjectSchemasTest {
    @Test
    void aNameMatchingTwoPatternsTakesBothSchemasAndOthersTakeAdditionalProperties() {
        check("""
                {"type": "object", "patternProperties": {"^x-": {"type": "integer"},
                  "^x-s": {"type": "integer", "minimum": 5}}, "additionalProperties": {"type": "string"}}""",
                List.of("{}", "{\"x-a\":1,\"b\":\"s\"}", "{\"x-s1\":5}", "{\"b\":\"s\", \"x-a\":-3}", "{\"x-\":0}"),
                List.of("{\"x-s1\":4}", "{\"x-a\":\"s\"}", "{\"b\":1}", "{\"x-\":\"s\"}", "{\"x-a\":1,\"b\":2}"));
    }

    @Test
    void escapedNamesAreClassifiedByTheNameTheySpell() {
        String s = """
                {"type": "object", "patternProperties": {"^x-": {"type": "integer", "minimum": 5}},
                 "additionalProperties": {"type": "string"}}""";
        // an escape may spell a name of another class: never accepted under the class its spelling suggests
        check(s, List.of("{\"x-s\":7}", "{\"xy\":\"s\"}"),
                List.of("{\"x\\u002ds\":4}", "{\"x\\u002da\":\"s\"}", "{\"\\u0078-\":\"s\"}"));
    }

    @Test
    void declaredPropertiesMatchingAPatternTakeBothSchemas() {
        check("""
                {"type": "object", "properties": {"xa": {"type": "integer"}, "b": {}},
                 "patternProperties": {"^x": {"minimum": 0}}, "additionalProperties": false}""",
                List.of("{}", "{\"xa\":1}", "{\"xa\":1,\"xy\":2}", "{\"b\":\"q\",\"xy\":3.5}"),
                List.of("{\"xa\":-1}", "{\"xa\":\"s\"}", "{\"c\":1}", "{\"xy\":-2}", "{\"b\":1,\"c\":1}"));
    }

    @Test
    void patternsBesidePropertiesLeaveOtherNamesOpen() {
        check("""
                {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
                 "patternProperties": {"^[0-9]+$": {"type": "boolean"}}}""",
                List.of("{\"a\":1}", "{\"a\":1,\"12\":true}", "{\"a\":1,\"z\":[1]}", "{\"a\":1,\"z\":{},\"3\":false}"),
                List.of("{\"a\":1,\"12\":1}", "{\"12\":true}", "{\"a\":\"s\"}", "{\"a\":1,\"z\":1,\"3\":null}"));
    }

    @Test
    void propertyNamesLimitEveryName() {
        check("""
                {"type": "object", "propertyNames": {"pattern": "^[a-c]+$", "maxLength": 3},
                 "additionalProperties": {"type": "integer"}}""",
                List.of("{}", "{\"ab\":1}", "{\"abc\":1,\"c\":2}"),
                List.of("{\"ad\":1}", "{\"ab\":\"s\"}", "{\"abca\":1}", "{\"\":1}"));
        check("""
                {"$defs": {"key": {"enum": ["jaas", "tls"]}}, "type": "object",
                 "properties": {"ldap": {}, "tls": {"type": "boolean"}}, "propertyNames": {"$ref": "#/$defs/key"}}""",
                List.of("{}", "{\"tls\":true}", "{\"tls\":true,\"jaas\":1}", "{\"jaas\":[]}"),
                List.of("{\"ldap\":1}", "{\"tls\":1}", "{\"kerberos\":1}"));
    }

    @Test
    void minAndMaxPropertiesCountDeclaredAndOtherMembers() {
        check("""
                {"type": "object", "properties": {"a": {}, "b": {}}, "minProperties": 1, "maxProperties": 2}""",
                List.of("{\"a\":1}", "{\"b\":1}", "{\"a\":1,\"b\":2}"),
                List.of("{}", "{\"a\":1,\"b\":2,\"z\":3}", "{\"a\":1,\"y\":2,\"z\":3}"));
        check("""
                {"type": "object", "minProperties": 2, "additionalProperties": {"type": "integer"}}""",
                List.of("{\"a\":1,\"b\":2}", "{\"a\":1,\"b\":2,\"c\":3}"), List.of("{}", "{\"a\":1}", "{\"a\":1,\"b\":\"s\"}"));
        check("""
                {"type": "object", "maxProperties": 0}""", List.of("{}", "{ }"), List.of("{\"a\":1}"));
    }

    @Test
    void dependentRequiredHoldsWhicheverOrderTheMembersComeIn() {
        check("""
                {"type": "object", "properties": {"a": {}, "b": {}, "c": {}},
                 "dependentRequired": {"c": ["a"], "a": ["b"]}}""",
                List.of("{}", "{\"b\":1}", "{\"a\":1,\"b\":1}", "{\"a\":1,\"b\":1,\"c\":1}"),
                List.of("{\"a\":1}", "{\"c\":1}", "{\"b\":1,\"c\":1}", "{\"a\":1,\"c\":1}"));
        check("""
                {"type": "object", "dependentRequired": {"x": ["y"]}, "additionalProperties": {"type": "integer"}}""",
                List.of("{\"x\":1,\"y\":2}", "{\"y\":1}", "{}"), List.of("{\"x\":1}", "{\"x\":1,\"z\":2}"));
    }

    @Test
    void draft7DependenciesListsAndRequiredOnlySchemas() {
        String s = """
                {"type": "object", "properties": {"card": {"type": "string"}, "billing": {}, "cvc": {}},
                 "dependencies": {"card": ["billing"], "cvc": {"required": ["card"], "description": "x"}}}""";
        assertThat(accepts(s, "{\"card\":\"1\",\"billing\":2}")).isTrue();
        assertThat(accepts(s, "{\"card\":\"1\",\"billing\":2,\"cvc\":3}")).isTrue();
        assertThat(accepts(s, "{\"billing\":2}")).isTrue();
        assertThat(accepts(s, "{\"card\":\"1\"}")).isFalse();
        assertThat(accepts(s, "{\"billing\":2,\"cvc\":3}")).isFalse();
        assertThatThrownBy(() -> SchemaCompiler.compile(schema("""
                {"type": "object", "dependencies": {"a": {"properties": {"b": {"type": "string"}}}}}""")))
                .isInstanceOf(UnsupportedSchemaException.class).hasMessageContaining("dependencies");
    }

    @Test
    void conjunctionsKeepPatternsExact() {
        check("""
                {"allOf": [{"type": "object", "patternProperties": {"^x": {"type": "integer"}},
                            "additionalProperties": false},
                           {"properties": {"xa": {"minimum": 3}}}]}""",
                List.of("{\"xa\":3}", "{\"xb\":1}", "{}"), List.of("{\"xa\":1}", "{\"c\":1}", "{\"xb\":\"s\"}"));
        // names one part's patterns exempt are additional in the other part: refused rather than let through
        assertThatThrownBy(() -> SchemaCompiler.compile(schema("""
                {"allOf": [{"type": "object", "patternProperties": {"^x": {}}},
                           {"additionalProperties": false}]}""")))
                .isInstanceOf(UnsupportedSchemaException.class).hasMessageContaining("patternProperties");
    }

    @Test
    void patternsSplittingNamesIntoTooManyClassesAreRefused() {
        StringBuilder pp = new StringBuilder();
        for (char ch = 'a'; ch < 'a' + 8; ch++) {
            pp.append(pp.isEmpty() ? "" : ", ").append("\"").append(ch).append("\": {\"type\": \"integer\"}");
        }
        assertThatThrownBy(() -> SchemaCompiler.compile(schema("{\"type\": \"object\", \"patternProperties\": {" + pp
                + "}}"))).isInstanceOf(ConstraintBudgetException.class)
                .hasMessageContaining("patternProperties").hasMessageContaining("classes");
    }
}
