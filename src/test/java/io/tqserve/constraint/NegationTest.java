package io.tqserve.constraint;

import static io.tqserve.constraint.GrammarEngineTest.accepts;
import static io.tqserve.constraint.GrammarEngineTest.schema;
import static io.tqserve.constraint.GrammarEngineTest.validator;
import static io.tqserve.constraint.GrammarEngineTest.walk;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.networknt.schema.InputFormat;
import com.networknt.schema.Schema;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@code not} ({@link Negation}) and overlapping {@code oneOf} branches ({@link OneOfCheck#exclusive}): per form,
 * documents the grammar must accept and documents it must reject, each also checked against a draft 2020-12
 * validator, and random walks through the token masks whose every document the validator accepts (so every
 * prefix the masks allow completes to a valid document).
 */
class NegationTest {
    private static void check(String schema, List<String> valid, List<String> invalid) {
        Schema v = validator(schema);
        for (String ok : valid) {
            assertThat(v.validate(ok, InputFormat.JSON)).as("validator on %s", ok).isEmpty();
            assertThat(accepts(schema, ok)).as("%s on %s", schema, ok).isTrue();
        }
        for (String bad : invalid) {
            assertThat(v.validate(bad, InputFormat.JSON)).as("validator on %s", bad).isNotEmpty();
            assertThat(accepts(schema, bad)).as("%s on %s", schema, bad).isFalse();
        }
        walks(schema);
    }

    /** Random walks through the masks: every document they end in is valid. */
    private static void walks(String schema) {
        TokenConstraint c = new TokenConstraint(SchemaCompiler.compile(schema(schema)),
                TokenConstraintTest.vocabulary());
        Schema v = validator(schema);
        SplittableRandom r = new SplittableRandom(29);
        for (int i = 0; i < 40; i++) {
            String doc = walk(c, r, c.minTokens() + r.nextInt(0, 12));
            assertThat(v.validate(doc, InputFormat.JSON)).as("%s walked to %s", schema, doc).isEmpty();
        }
    }

    @Test
    void notTypeLeavesTheOtherTypes() {
        check("""
                {"type": ["string", "integer", "null"], "not": {"type": "integer"}}""",
                List.of("\"a\"", "null"), List.of("1", "-7", "true"));
        // an integer written 3.0 is an integer: numbers go with integers (narrower, never looser)
        check("""
                {"not": {"type": ["integer", "object"]}}""",
                List.of("\"x\"", "null", "[1]", "false"), List.of("3", "3.0", "{}"));
    }

    @Test
    void notEnumExcludesTheValues() {
        check("""
                {"type": "string", "not": {"enum": ["a", "b\\"c"]}}""",
                List.of("\"c\"", "\"ab\"", "\"\"", "\"b\""), List.of("\"a\"", "\"b\\\"c\"", "\"\\u0061\""));
        check("""
                {"type": ["boolean", "null"], "not": {"const": true}}""",
                List.of("false", "null"), List.of("true"));
        check("""
                {"not": {"enum": ["x", 1, null]}}""",
                List.of("\"y\"", "true", "[]", "{}"), List.of("\"x\"", "1", "null", "1.0"));
    }

    @Test
    void notRequiredLeavesAMemberOut() {
        check("""
                {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                 "not": {"required": ["a", "b"]}}""",
                List.of("{}", "{\"a\": 1}", "{\"b\": 2}"), List.of("{\"a\": 1, \"b\": 2}"));
        // a required member that must be absent: only the other members' branch is left
        check("""
                {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                 "required": ["a"], "not": {"required": ["a", "b"]}}""",
                List.of("{\"a\": 1}"), List.of("{\"a\": 1, \"b\": 2}", "{\"b\": 2}"));
        // free-form objects: the member name itself is excluded from the keys
        check("""
                {"type": "object", "not": {"required": ["x"]}}""",
                List.of("{}", "{\"y\": 1}", "{\"xx\": 1}"), List.of("{\"x\": 1}", "{\"y\": 1, \"x\": 2}"));
        // without a type, NOT an object with a means any non-object as well
        check("""
                {"not": {"type": "object", "required": ["a"]}}""",
                List.of("1", "\"a\"", "{\"b\": 1}"), List.of("{\"a\": 1}"));
    }

    @Test
    void notAnyOfIsTheConjunctionOfTheNegations() {
        check("""
                {"type": "object", "properties": {"a": {}, "b": {}, "c": {"type": "integer"}},
                 "not": {"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}}""",
                List.of("{}", "{\"c\": 1}"), List.of("{\"a\": 1}", "{\"b\": 1}", "{\"a\": 1, \"b\": 1}"));
        check("""
                {"type": "object", "properties": {"a": {}, "b": {}},
                 "not": {"allOf": [{"required": ["a"]}, {"required": ["b"]}]}}""",
                List.of("{}", "{\"a\": 1}", "{\"b\": 1}"), List.of("{\"a\": 1, \"b\": 1}"));
    }

    @Test
    void notPropertiesNeedsTheMemberWithAFailingValue() {
        // {} satisfies properties (nothing to check), so NOT properties rejects it
        check("""
                {"type": "object", "properties": {"kind": {"type": "string"}},
                 "not": {"properties": {"kind": {"const": "x"}}}}""",
                List.of("{\"kind\": \"y\"}", "{\"kind\": \"\"}"), List.of("{}", "{\"kind\": \"x\"}"));
        check("""
                {"type": "object", "properties": {"a": {}},
                 "not": {"properties": {"a": {"type": "integer"}}}}""",
                List.of("{\"a\": \"x\"}", "{\"a\": null}"), List.of("{}", "{\"a\": 1}"));
    }

    @Test
    void notPatternIsTheComplementOfTheAutomaton() {
        check("""
                {"type": "string", "not": {"pattern": "^a"}}""",
                List.of("\"ba\"", "\"\"", "\"A\""), List.of("\"abc\"", "\"a\""));
        check("""
                {"type": "string", "maxLength": 3, "pattern": "^[a-z]+$", "not": {"pattern": "x"}}""",
                List.of("\"abc\"", "\"q\""), List.of("\"ax\"", "\"x\"", "\"abcd\""));
        check("""
                {"not": {"type": "string", "pattern": "[0-9]"}}""",
                List.of("\"abc\"", "5", "null"), List.of("\"a1\""));
    }

    @Test
    void boundsBecomeTheOppositeBound() {
        check("""
                {"type": "integer", "not": {"minimum": 5}}""", List.of("4", "-3"), List.of("5", "6"));
        check("""
                {"type": "number", "not": {"exclusiveMaximum": 2}}""", List.of("2", "2.5"), List.of("1.9", "-1"));
        check("""
                {"type": "string", "not": {"minLength": 3}}""", List.of("\"ab\"", "\"\""), List.of("\"abc\""));
        check("""
                {"type": "array", "not": {"maxItems": 1}}""", List.of("[1, 2]"), List.of("[1]", "[]"));
    }

    @Test
    void doubleNegationAndReferences() {
        check("""
                {"not": {"not": {"type": "string", "maxLength": 1}}}""",
                List.of("\"a\"", "\"\""), List.of("\"ab\"", "1"));
        check("""
                {"$defs": {"s": {"type": "string"}}, "type": ["string", "null"], "not": {"$ref": "#/$defs/s"}}""",
                List.of("null"), List.of("\"x\""));
        check("""
                {"allOf": [{"enum": [1, "a", null]}, {"not": {"type": "string"}}]}""",
                List.of("1", "null"), List.of("\"a\"", "2"));
        // enum values are filtered on the values themselves: strings by the patterns, objects by their members
        check("""
                {"enum": ["a1", "b", "c\ud83d\ude00", {"x": 1}, {"y": 1}], "not": {"anyOf": [
                  {"type": "string", "pattern": "[0-9]"}, {"type": "object", "required": ["x"]}]}}""",
                List.of("\"b\"", "{\"y\":1}"), List.of("\"a1\"", "{\"x\":1}"));
        // a keyword of one type holds for the other types: NOT multipleOf is numbers only (none kept here)
        check("""
                {"not": {"type": "integer", "multipleOf": 2}}""", List.of("\"x\"", "null"), List.of("4", "4.0"));
        assertThatThrownBy(() -> SchemaCompiler.compile(schema("""
                {"type": ["integer", "string"], "not": {"multipleOf": 2}}""")))
                .hasMessageContaining("no JSON document satisfies the schema");
        // NOT required is objects without the member, never other types
        check("""
                {"type": ["object", "string"], "properties": {"a": {}}, "not": {"required": ["a"]}}""",
                List.of("{}"), List.of("\"x\"", "{\"a\": 1}"));
    }

    @Test
    void booleanAndEmptyNegations() {
        check("""
                {"type": "integer", "not": false}""", List.of("1"), List.of("\"x\""));
        for (String s : List.of("{\"not\": {}}", "{\"not\": true}", "{\"type\": \"string\", \"not\": "
                + "{\"type\": \"string\"}}")) {
            assertThatThrownBy(() -> SchemaCompiler.compile(schema(s))).as(s)
                    .isInstanceOf(UnsupportedSchemaException.class)
                    .hasMessageContaining("no JSON document satisfies the schema");
        }
    }

    @Test
    void overlappingOneOfBranchesExcludeEachOther() {
        // a document with both a and b matches both branches: invalid
        check("""
                {"oneOf": [
                  {"type": "object", "properties": {"a": {"type": "integer"}, "b": {}}, "required": ["a"]},
                  {"type": "object", "properties": {"a": {"type": "integer"}, "b": {}}, "required": ["b"]}]}""",
                List.of("{\"a\": 1}", "{\"b\": 2}"), List.of("{\"a\": 1, \"b\": 2}", "{}"));
        // const discriminators
        check("""
                {"oneOf": [
                  {"type": "object", "properties": {"kind": {"const": "x"}, "v": {"type": "integer"}},
                   "required": ["kind"]},
                  {"type": "object", "properties": {"kind": {"const": "y"}, "v": {"type": "string"}},
                   "required": ["kind"]}]}""",
                List.of("{\"kind\": \"x\", \"v\": 1}", "{\"kind\": \"y\", \"v\": \"s\"}", "{\"kind\": \"y\"}"),
                List.of("{\"kind\": \"x\", \"v\": \"s\"}", "{\"kind\": \"z\"}"));
        // one branch subsumes part of another: the shared part is in neither
        check("""
                {"oneOf": [{"type": "string", "maxLength": 3}, {"type": "string", "pattern": "^a"}]}""",
                List.of("\"xyz\"", "\"abcd\""), List.of("\"ab\"", "\"a\"", "\"wxyz\""));
        // siblings apply to every branch, and the other branches are negated without them
        check("""
                {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                 "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}""",
                List.of("{\"a\": 1}", "{\"b\": 1}"), List.of("{\"a\": 1, \"b\": 1}", "{}"));
    }

    @Test
    void closedObjectsInOneOfAreTellApartByTheirMembers() {
        // {} matches both branches; a member the other branch does not declare makes it fail there
        check("""
                {"type": "object", "oneOf": [
                  {"additionalProperties": false, "properties": {"key": {"type": "string", "maxLength": 4}}},
                  {"additionalProperties": false, "properties": {"keys": {"type": "array"}}}]}""",
                List.of("{\"key\": \"ab\"}", "{\"keys\": []}"),
                List.of("{}", "{\"key\": \"ab\", \"keys\": []}", "{\"key\": 1}"));
        // discriminated by a required constant: each branch already excludes the others, compiled as is
        check("""
                {"oneOf": [
                  {"type": "object", "properties": {"t": {"const": "a"}, "n": {"type": "integer"}},
                   "required": ["t"]},
                  {"type": "object", "properties": {"t": {"const": "b"}, "n": {"type": "string"}},
                   "required": ["t"]},
                  {"type": "object", "properties": {"t": {"enum": ["c", "d"]}}, "required": ["t"]}]}""",
                List.of("{\"t\": \"a\", \"n\": 1}", "{\"t\": \"b\"}", "{\"t\": \"d\"}"),
                List.of("{\"t\": \"a\", \"n\": \"x\"}", "{\"t\": \"e\"}", "{}"));
    }

    @Test
    void aMemberKeptAbsentStaysAbsentThroughLaterConjunctions() {
        // y is never written (not declared); x must then be present with a non-integer value
        check("""
                {"type": "object", "properties": {"a": {}, "x": {}},
                 "not": {"anyOf": [{"required": ["y"]}, {"properties": {"x": {"type": "integer"}}}]}}""",
                List.of("{\"x\": \"s\"}", "{\"a\": 1, \"x\": \"s\"}"),
                List.of("{}", "{\"x\": 1}", "{\"a\": 1}"));
        // here x must be absent (required) and present (properties): nothing is left
        assertThatThrownBy(() -> SchemaCompiler.compile(schema("""
                {"type": "object", "properties": {"a": {}},
                 "not": {"anyOf": [{"required": ["x"]}, {"properties": {"x": {"type": "integer"}}}]}}""")))
                .hasMessageContaining("no JSON document satisfies the schema");
    }

    @Test
    void recursiveOneOfBranchesStayAFiniteGrammar() {
        // {"v": 1} is both a node and a leaf: in neither; the node branch is a rule shared by every level
        check("""
                {"$defs": {
                  "node": {"type": "object", "additionalProperties": false, "required": ["v"],
                    "properties": {"v": {"type": "integer"}, "kids": {"type": "array",
                      "items": {"oneOf": [{"$ref": "#/$defs/node"}, {"$ref": "#/$defs/leaf"}]}}}},
                  "leaf": {"type": "object", "additionalProperties": false, "required": ["v"],
                    "properties": {"v": {"type": "integer"}, "tag": {"type": "string"}}}},
                 "$ref": "#/$defs/node"}""",
                List.of("{\"v\": 1, \"kids\": [{\"v\": 2, \"kids\": []}, {\"v\": 3, \"tag\": \"a\"}]}",
                        "{\"v\": 1}"),
                List.of("{\"v\": 1, \"kids\": [{\"v\": 2}]}",
                        "{\"v\": 1, \"kids\": [{\"v\": 2, \"kids\": [{\"v\": 3}]}]}"));
    }

    @Test
    void oneOfWithAnEqualBranchHasNoDocument() {
        assertThatThrownBy(() -> SchemaCompiler.compile(schema("""
                {"oneOf": [{"type": "string"}, {"type": "string"}]}""")))
                .isInstanceOf(UnsupportedSchemaException.class)
                .hasMessageContaining("no JSON document satisfies the schema");
    }

    @Test
    void malformedNegationsAreRefusedNeverThrowOtherwise() {
        for (String s : List.of("{\"not\": 5}", "{\"not\": {\"required\": \"a\"}}", "{\"not\": {\"enum\": 3}}",
                "{\"not\": {\"properties\": 3}}", "{\"not\": {\"anyOf\": {}}}", "{\"not\": {\"type\": 7}}",
                "{\"not\": {\"minLength\": \"x\"}}", "{\"not\": {\"$ref\": \"#/nope\"}}",
                "{\"type\": \"string\", \"not\": {\"pattern\": 5}}", "{\"type\": \"string\", \"not\": "
                        + "{\"pattern\": \"(\"}}", "{\"not\": {\"maximum\": \"x\"}}",
                "{\"$defs\": {\"a\": {\"not\": {\"$ref\": \"#/$defs/a\"}}}, \"$ref\": \"#/$defs/a\"}")) {
            try {
                SchemaCompiler.compile(schema(s));
            } catch (UnsupportedSchemaException e) {
                assertThat(e.keyword()).as(s).isNotBlank();
            }
        }
    }

    @Test
    void tooManyBranchesAreRefusedNamingNot() {
        StringBuilder any = new StringBuilder("{\"type\": \"object\", \"not\": {\"anyOf\": [");
        for (int i = 0; i < 4; i++) {
            any.append(i == 0 ? "" : ", ").append("{\"required\": [\"a").append(i).append("\", \"b").append(i)
                    .append("\", \"c").append(i).append("\", \"d").append(i).append("\"]}");
        }
        String s = any.append("]}}").toString();
        assertThatThrownBy(() -> SchemaCompiler.compile(schema(s)))
                .isInstanceOf(ConstraintBudgetException.class)
                .extracting(e -> ((UnsupportedSchemaException) e).keyword()).isEqualTo("not");
    }
}
