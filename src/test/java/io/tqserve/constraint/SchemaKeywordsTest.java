package io.tqserve.constraint;

import static io.tqserve.constraint.GrammarEngineTest.accepts;
import static io.tqserve.constraint.GrammarEngineTest.validator;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.networknt.schema.InputFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Keyword coverage of {@link SchemaCompiler}: per keyword, documents the grammar accepts and rejects (each checked
 * against a JSON Schema validator too, so the expectations are the specification's), and the keywords refused
 * with their name.
 */
class SchemaKeywordsTest {
    private static void check(String schema, List<String> valid, List<String> invalid) {
        for (String ok : valid) {
            assertThat(validator(schema).validate(ok, InputFormat.JSON)).as("validator on %s", ok).isEmpty();
        }
        for (String bad : invalid) {
            assertThat(validator(schema).validate(bad, InputFormat.JSON)).as("validator on %s", bad).isNotEmpty();
        }
        grammar(schema, valid, invalid);
    }

    /** Grammar only: for what the validator reads differently (format is an annotation in its 2020-12 mode). */
    private static void grammar(String schema, List<String> valid, List<String> invalid) {
        for (String ok : valid) {
            assertThat(accepts(schema, ok)).as("%s on %s", schema, ok).isTrue();
        }
        for (String bad : invalid) {
            assertThat(accepts(schema, bad)).as("%s on %s", schema, bad).isFalse();
        }
    }

    @Test
    void keywordsOfNoVocabularyAreIgnored() {
        grammar("""
                {"type": "object", "id": "http://example.com/s", "x-kubernetes-patch-strategy": "merge",
                 "javaType": "Foo", "properties": {"a": {"type": "string", "_format": "x", "self": {"vendor": "v"}}},
                 "required": ["a"], "additionalProperties": false}""",
                List.of("{\"a\": \"x\"}"), List.of("{\"a\": 1}", "{}"));
    }

    @Test
    void pattern() {
        check("{\"type\": \"string\", \"pattern\": \"^[A-Z]{2}\\\\d$\"}", List.of("\"AB1\"", "\"ZZ9\""),
                List.of("\"ab1\"", "\"AB12\"", "\"A1\""));
        check("{\"type\": \"string\", \"pattern\": \"b+\"}", List.of("\"abba\"", "\"b\""), List.of("\"aa\"", "\"\""));
        check("{\"type\": \"string\", \"pattern\": \"^a+$\", \"maxLength\": 3, \"minLength\": 2}",
                List.of("\"aa\"", "\"aaa\""), List.of("\"a\"", "\"aaaa\""));
        check("{\"type\": \"string\", \"pattern\": \"^[^\\\"]*$\"}", List.of("\"x\\\\y\"", "\"\\n\""),
                List.of("\"a\\\"b\""));
        // without a type, the pattern's strings (other types would also be valid: a narrower grammar)
        assertThat(accepts("{\"pattern\": \"^x\"}", "\"xy\"")).isTrue();
        assertThat(accepts("{\"pattern\": \"^x\"}", "\"yx\"")).isFalse();
    }

    @Test
    void formats() {
        grammar("{\"type\": \"string\", \"format\": \"date\"}", List.of("\"2024-02-28\""),
                List.of("\"2024-02-30\"", "\"2024-2-1\""));
        grammar("{\"type\": \"string\", \"format\": \"date-time\"}", List.of("\"2024-02-28T10:00:00Z\""),
                List.of("\"2024-02-28 10:00:00Z\""));
        grammar("{\"type\": \"string\", \"format\": \"ipv4\"}", List.of("\"10.0.0.1\""), List.of("\"10.0.0.256\""));
        grammar("{\"type\": \"string\", \"format\": \"email\", \"maxLength\": 8}", List.of("\"a@b.com\""),
                List.of("\"ab@cd.com\"", "\"a.b.com\""));
        assertThatThrownBy(() -> SchemaCompiler.compile(GrammarEngineTest.schema(
                "{\"type\": \"string\", \"format\": \"color\"}")))
                .isInstanceOfSatisfying(UnsupportedSchemaException.class, e -> assertThat(e.keyword())
                        .isEqualTo("format"));
    }

    @Test
    void draft4BooleanExclusiveBounds() {
        String schema = "{\"type\": \"integer\", \"minimum\": 5, \"exclusiveMinimum\": true, \"maximum\": 9, "
                + "\"exclusiveMaximum\": false}";
        assertThat(accepts(schema, "6")).isTrue();
        assertThat(accepts(schema, "9")).isTrue();
        assertThat(accepts(schema, "5")).isFalse();
        assertThat(accepts(schema, "10")).isFalse();
    }

    @Test
    void propertyCountsAreEnforced() {
        check("""
                {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                 "required": ["a"], "minProperties": 1, "maxProperties": 2, "additionalProperties": false}""",
                List.of("{\"a\": 1}", "{\"a\": 1, \"b\": 2}"), List.of("{\"b\": 2}"));
    }

    @Test
    void refusedKeywordsAreNamed() {
        Map<String, String> refused = Map.of(
                "{\"if\": {\"type\": \"string\"}, \"then\": {\"minLength\": 1}}", "if",
                "{\"type\": \"object\", \"dependentSchemas\": {\"a\": {}}}", "dependentSchemas",
                "{\"type\": \"number\", \"divisibleBy\": 2}", "divisibleBy",
                "{\"type\": \"object\", \"propertyNames\": {\"format\": \"email\"}}", "propertyNames",
                "{\"type\": \"object\", \"dependencies\": {\"a\": {\"properties\": {}}}}", "dependencies",
                "{\"$defs\": {\"a\": {\"$id\": \"http://x/a\", \"properties\": {\"b\": {\"$ref\": \"#/c\"}}}}, "
                        + "\"$ref\": \"#/$defs/a\"}", "$id",
                "{\"type\": \"string\", \"pattern\": \"(a)\\\\1\"}", "pattern");
        refused.forEach((schema, keyword) -> assertThatThrownBy(() -> SchemaCompiler.compile(
                GrammarEngineTest.schema(schema))).as(schema)
                .isInstanceOfSatisfying(UnsupportedSchemaException.class, e -> assertThat(e.keyword())
                        .isEqualTo(keyword)));
    }
}
