package io.tqserve.constraint;

import static io.tqserve.constraint.GrammarEngineTest.accepts;
import static io.tqserve.constraint.GrammarEngineTest.check;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Conjunctions in {@link SchemaCompiler} ({@link SchemaKeywords#merge}): allOf with several branches, keywords
 * beside {@code $ref}/{@code anyOf}/{@code oneOf}, {@code enum} beside other keywords, tuples ({@code
 * prefixItems}), boolean schemas and formats of no draft. Every expectation is checked against a draft 2020-12
 * validator as well, so the grammar is never looser than the specification.
 */
class SchemaConjunctionTest {
    @Test
    void allOfBranchesAreMerged() {
        check("""
                {"allOf": [
                  {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}, "required": ["a"]},
                  {"properties": {"a": {"maximum": 9}, "b": {"type": "string", "maxLength": 2}}, "required": ["b"]}]}
                """,
                List.of("{\"a\":0,\"b\":\"x\"}", "{\"a\":9,\"b\":\"\"}"),
                List.of("{\"a\":10,\"b\":\"x\"}", "{\"a\":1}", "{\"b\":\"x\"}", "{\"a\":1,\"b\":\"xyz\"}"));
    }

    @Test
    void additionalPropertiesOfOneBranchCloseTheOthersProperties() {
        check("""
                {"allOf": [
                  {"properties": {"a": {"type": "integer"}}, "additionalProperties": false},
                  {"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}]}""",
                List.of("{\"a\":1}", "{}"), List.of("{\"a\":\"x\"}", "{\"a\":1,\"b\":2}"));
        // a property one branch requires and the other forbids: nothing is valid
        assertThatThrownBy(() -> SchemaCompiler.compile(GrammarEngineTest.schema("""
                {"allOf": [{"type": "object", "properties": {"a": {}}, "additionalProperties": false},
                           {"type": "object", "properties": {"b": {}}, "required": ["b"]}]}""")))
                .isInstanceOf(UnsupportedSchemaException.class)
                .hasMessageContaining("no JSON document satisfies the schema");
    }

    @Test
    void theSchemaItselfIsNeverModified() {
        java.util.Map<?, ?> schema = GrammarEngineTest.schema("""
                {"allOf": [{"type": "object", "additionalProperties": false}, {"properties": {"b": {}}}]}""");
        String before = schema.toString();
        assertThat(accepts(SchemaCompiler.compile(schema), "{}")).isTrue();
        assertThat(accepts(SchemaCompiler.compile(schema), "{\"b\":1}")).isFalse();
        assertThat(schema.toString()).isEqualTo(before);
    }

    @Test
    void aSchemaReachingItselfThroughARefWithSiblingsIsAFiniteGrammar() {
        // MaskBench's Github_hard o61026 has this shape: merged into itself level after level, it ran into the
        // compile budget (and gigabytes of heap) instead of becoming a recursive rule
        check("""
                {"definitions": {"params": {"type": "array", "items": {"type": "object",
                   "properties": {"name": {"type": "string", "maxLength": 3},
                                  "callback": {"$ref": "#/definitions/params", "minItems": 0, "maxItems": 2,
                                               "type": "array"}},
                   "required": ["name"], "additionalProperties": false}}},
                 "$ref": "#/definitions/params"}""",
                List.of("[]", "[{\"name\":\"a\"}]", "[{\"name\":\"a\",\"callback\":[{\"name\":\"b\",\"callback\":"
                        + "[{\"name\":\"c\"},{\"name\":\"d\",\"callback\":[]}]}]}]"),
                List.of("[{\"name\":\"a\",\"callback\":[{\"name\":\"b\"},{\"name\":\"c\"},{\"name\":\"d\"}]}]",
                        "[{\"name\":\"a\",\"callback\":[{\"name\":\"b\",\"callback\":[{}]}]}]",
                        "[{\"name\":\"abcd\"}]"));
    }

    @Test
    void siblingsOfRefApplyToTheReferencedSchema() {
        check("""
                {"$defs": {"name": {"type": "string", "minLength": 1}},
                 "type": "object", "properties": {"n": {"$ref": "#/$defs/name", "maxLength": 3}},
                 "required": ["n"]}""",
                List.of("{\"n\":\"abc\"}", "{\"n\":\"a\"}"), List.of("{\"n\":\"\"}", "{\"n\":\"abcd\"}", "{}"));
    }

    @Test
    void recursiveRefsBesideSiblingsStayFinite() {
        check("""
                {"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"},
                   "v": {"type": "integer"}}, "required": ["v"]}},
                 "$ref": "#/$defs/node", "properties": {"v": {"minimum": 1}}}""",
                List.of("{\"v\":1}", "{\"next\":{\"v\":0},\"v\":2}"), List.of("{\"v\":0}", "{}"));
    }

    @Test
    void siblingsOfAnyOfAndOneOfApplyToEveryBranch() {
        check("""
                {"type": "object", "properties": {"kind": {"type": "string"}}, "required": ["kind"],
                 "anyOf": [{"properties": {"kind": {"const": "a"}}}, {"properties": {"kind": {"const": "b"}}}]}""",
                List.of("{\"kind\":\"a\"}", "{\"kind\":\"b\"}"), List.of("{\"kind\":\"c\"}", "{}"));
        check("""
                {"type": "string", "maxLength": 2, "oneOf": [{"enum": ["x", "yyy"]}, {"const": "zz"}]}""",
                List.of("\"x\"", "\"zz\""), List.of("\"yyy\"", "\"q\""));
    }

    @Test
    void enumValuesAreFilteredByTheOtherKeywords() {
        check("""
                {"type": "string", "enum": ["a", "bb", "ccc", 5], "minLength": 2, "pattern": "^[a-b]"}""",
                List.of("\"bb\""), List.of("\"a\"", "\"ccc\"", "5"));
        check("""
                {"enum": [1, 5, 12], "minimum": 2, "maximum": 10}""", List.of("5"), List.of("1", "12"));
    }

    @Test
    void prefixItemsAndDraft4TupleItems() {
        check("""
                {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
                 "items": {"type": "boolean"}, "minItems": 1, "maxItems": 3}""",
                List.of("[1]", "[1,\"a\"]", "[1,\"a\",true]"),
                List.of("[]", "[\"a\"]", "[1,2]", "[1,\"a\",true,false]", "[1,\"a\",3]"));
        check("""
                {"type": "array", "prefixItems": [{"type": "integer"}], "items": false}""",
                List.of("[]", "[7]"), List.of("[7,8]"));
        // draft 4 spelling: items as an array, additionalItems for the rest (read as draft 2020-12 by the test)
        assertThat(accepts("{\"items\": [{\"type\": \"integer\"}], \"additionalItems\": false}", "[1]")).isTrue();
        assertThat(accepts("{\"items\": [{\"type\": \"integer\"}], \"additionalItems\": false}", "[1,2]")).isFalse();
        assertThat(accepts("{\"items\": [{\"type\": \"integer\"}], \"additionalItems\": false}", "[\"a\"]"))
                .isFalse();
    }

    @Test
    void booleanSchemas() {
        check("""
                {"type": "object", "properties": {"a": false, "b": true}}""",
                List.of("{}", "{\"b\":[1]}"), List.of("{\"a\":1}"));
    }

    @Test
    void formatsOfNoDraftAreAnnotations() {
        // "path" and "int8" are defined by no JSON Schema draft: validators ignore them, so does the grammar
        check("{\"type\": \"string\", \"format\": \"path\", \"maxLength\": 3}", List.of("\"a/b\""),
                List.of("\"a/bc\""));
        check("{\"type\": \"integer\", \"format\": \"int8\"}", List.of("300"), List.of("1.5"));
        // a format a draft defines and the grammar does not enforce is refused
        assertThatThrownBy(() -> SchemaCompiler.compile(GrammarEngineTest.schema(
                "{\"type\": \"string\", \"format\": \"duration\"}")))
                .isInstanceOfSatisfying(UnsupportedSchemaException.class, e -> assertThat(e.keyword())
                        .isEqualTo("format"));
    }

    @Test
    void conflictingValuesInAConjunctionAreRefusedByName() {
        assertThatThrownBy(() -> SchemaCompiler.compile(GrammarEngineTest.schema("""
                {"allOf": [{"type": "string", "pattern": "^a"}, {"pattern": "b$"}]}""")))
                .isInstanceOfSatisfying(UnsupportedSchemaException.class, e -> assertThat(e.keyword())
                        .isEqualTo("pattern"));
    }
}
