package io.tqserve.constraint;

import static io.tqserve.constraint.GrammarEngineTest.accepts;
import static io.tqserve.constraint.GrammarEngineTest.check;
import static io.tqserve.constraint.GrammarEngineTest.validator;
import static org.assertj.core.api.Assertions.assertThat;

import com.networknt.schema.InputFormat;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Members an object schema does not declare ({@link UndeclaredNames}): written after the declared ones under
 * {@code additionalProperties}, never under a declared name. The schemas and valid instances are excerpts of
 * MaskBench (guidance-ai/jsonschemabench, {@code maskbench/data}, the file named in each test) that the grammar
 * rejected while it wrote declared members only; every expectation is checked against a draft 2020-12 validator.
 */
class UndeclaredMembersTest {
    @Test
    void additionalPropertiesTrueTakesAnyMemberAfterTheDeclaredOnes() {
        // Github_easy---o11187
        check("""
                {"type": "object", "properties": {"status": {"type": "string"}, "prize": {"type": "string"}},
                 "additionalProperties": true}""",
                List.of("{\"status\": \"success\", \"prize\": \"Gold Medal\", \"additionalInfo\": "
                        + "\"Congratulations on winning the top prize!\"}",
                        "{\"additionalInfo\": [1, {\"x\": null}], \"more\": 2.5}", "{}"),
                List.of("{\"status\": 123, \"prize\": \"Gold Medal\", \"additionalInfo\": \"x\"}",
                        // a declared name is never taken for an undeclared one: its own schema applies
                        "{\"status\": \"success\", \"prize\": 7}", "{\"more\": 1, \"prize\": 7}"));
    }

    @Test
    void absentAdditionalPropertiesAllowsThemToo() {
        // Github_easy---o55574 (additionalProperties absent inside "body")
        check("""
                {"type": "object", "properties": {"body": {"type": "object", "properties": {"id": {"type": "string"}}},
                 "n": {"type": "integer"}}, "required": ["n"]}""",
                List.of("{\"n\": 1, \"additionalProperty\": \"someValue\"}",
                        "{\"body\": {\"commandId\": \"12345\", \"data\": {\"username\": \"johnDoe\"}}, \"n\": 2}",
                        "{\"body\": {\"id\": \"a\", \"idx\": 1}, \"n\": 2, \"i\": {}, \"nn\": []}"),
                List.of("{\"body\": \"string instead of object\", \"n\": 1}", "{\"extra\": 1}",
                        "{\"n\": 1, \"body\": {\"id\": 5}}", "{\"body\": {\"id\": 5, \"x\": 1}, \"n\": 1}"));
    }

    @Test
    void additionalPropertiesSchemaAppliesToEveryUndeclaredMember() {
        // Github_easy---o90937
        check("""
                {"type": "object", "definitions": {"option": {"type": "object",
                   "properties": {"enabled": {"type": "boolean"}}}},
                 "additionalProperties": {"type": "object", "$ref": "#/definitions/option"},
                 "properties": {"knownProp": {"type": "object", "$ref": "#/definitions/option"}}}""",
                List.of("{\"knownProp\": {\"enabled\": true}, \"unknownProp\": {\"enabled\": false}}",
                        "{\"a\": {}, \"b\": {\"enabled\": true, \"c\": 1}}"),
                List.of("{\"knownProp\": {\"enabled\": \"true\"}, \"unknownProp\": {\"enabled\": false}}",
                        "{\"knownProp\": {\"enabled\": true}, \"unknownProp\": {\"enabled\": \"false\"}}",
                        "{\"knownProp\": {\"enabled\": true}, \"unknownProp\": 1}"));
    }

    @Test
    void falseKeepsTheObjectClosedAndNamesDifferingInAnyByteAreUndeclared() {
        check("""
                {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": false}""",
                List.of("{\"a\": 1}", "{}"), List.of("{\"a\": 1, \"b\": 2}", "{\"b\": 2}"));
        // names sharing a prefix with a declared one, longer or shorter, escaped, or non-ASCII are undeclared
        String s = """
                {"type": "object", "properties": {"name": {"type": "string"}, "né": {"type": "string"},
                 "a\\"b": {"type": "string"}}, "additionalProperties": {"type": "integer"}}""";
        check(s, List.of("{\"na\": 1, \"names\": 2, \"nam\\n\": 3, \"n\": 4, \"\": 5, \"é\": 6, \"nè\": 7, "
                        + "\"a\\\"\": 8, \"\\u0001\": 9, \"😀\": 10}",
                        "{\"name\": \"x\", \"né\": \"y\", \"a\\\"b\": \"z\", \"nameX\": 1}"),
                List.of("{\"na\": \"x\"}", "{\"name\": 1}", "{\"né\": 1}", "{\"a\\\"b\": 1}"));
        // other spellings of a declared name would escape its schema: only the one spelling is written
        assertThat(validator(s).validate("{\"n\\u0061me\": 1}", InputFormat.JSON)).isNotEmpty();
        assertThat(accepts(s, "{\"n\\u0061me\": 1}")).isFalse();
        assertThat(accepts(s, "{\"x\\/y\": 1}")).isFalse(); // a spelling json.dumps never writes
        assertThat(accepts(s, "{\"\\u0008\": 1}")).isFalse(); // \b is the one spelling of U+0008
        assertThat(accepts(s, "{\"\\b\": 1}")).isTrue();
    }

    @Test
    void theLexemeSpellsEachNameOnce() {
        UndeclaredNames x = UndeclaredNames.except(List.of("ab", "a", "b\u00e9"));
        assertThat(run(x, "ab")).isFalse();
        assertThat(run(x, "a")).isFalse();
        assertThat(run(x, "bé")).isFalse();
        assertThat(run(x, "b")).isTrue();
        assertThat(run(x, "abc")).isTrue();
        assertThat(run(x, "bè")).isTrue();
        assertThat(run(x, "")).isTrue();
        assertThat(run(x, "b\u00e9\u00e9")).isTrue();
        // a name may leave the trie in the middle of a character: é (C3 A9) and è (C3 A8) share their lead byte
        assertThat(x.step(x.step(x.step(x.start(), 'b'), 0xC3), 0xA8)).isNotEqualTo(Lexeme.DEAD);
        assertThat(x.accepting(x.step(x.step(x.start(), 'b'), 0xC3))).isFalse();
        // once outside the trie, every object's names go on alike: one shared lexeme (and mask cache) for them all
        UndeclaredNames y = UndeclaredNames.except(List.of("zz"));
        for (UndeclaredNames n : List.of(x, y)) {
            int out = n.step(n.step(n.start(), 'q'), 0xC3);
            assertThat(n.sharedLexeme(out)).isSameAs(UndeclaredNames.OUTSIDE);
            assertThat(n.sharedLexeme(n.start())).isSameAs(n);
            for (int b = 0; b < 256; b++) {
                int t = n.step(out, b);
                int u = UndeclaredNames.OUTSIDE.step(n.sharedState(out), b);
                assertThat(t < 0 ? Lexeme.DEAD : n.sharedState(t)).isEqualTo(u);
                assertThat(t >= 0 && n.accepting(t)).isEqualTo(u >= 0 && UndeclaredNames.OUTSIDE.accepting(u));
            }
        }
    }

    @Test
    void masksInsideDeclaredNamesEqualTheExactWalk() {
        // the masks of an undeclared name inside the declared names' trie come from the shared mask of the
        // character state less the declared names' ends: equal, at every byte of these documents, to the walk of the
        // whole vocabulary with the parser
        List<byte[]> t = new ArrayList<>();
        for (int b = 0; b < 256; b++) {
            t.add(new byte[] {(byte) b});
        }
        for (String s : List.of("{\"", "\":", "\": ", "\": 1", "\":1", "name", "nam", "na", "me", "e\"", "e\": 1",
                "me\": 1", "me\": \"", "ame\":", "\"na", "\"name", "é", "é\"", "\\\"", "b\": 2", "\", \"", "names")) {
            t.add(s.getBytes(StandardCharsets.UTF_8));
        }
        t.add(null);
        Vocabulary v = new Vocabulary(t.toArray(byte[][]::new));
        String schema = """
                {"type": "object", "properties": {"name": {"type": "string"}, "na": {"type": "string"},
                 "né": {"type": "string"}, "a\\"b": {"type": "string"}}, "additionalProperties": {"type": "integer"}}""";
        TokenConstraint c = new TokenConstraint(SchemaCompiler.compile(GrammarEngineTest.schema(schema)), v);
        int compared = GrammarEngineTest.compareAlongDocuments(c, List.of(
                "{\"name\": \"x\", \"nam\": 1, \"names\": 2, \"n\": 3, \"\": 4}",
                "{\"na\": \"y\", \"né\": \"z\", \"nè\": 5, \"a\\\"b\": \"w\", \"a\\\"\": 6}"), 3, 1 << 20);
        assertThat(compared).isGreaterThan(150);
        // after {"na the declared "name" is a string: "me": 1" would write it as an undeclared integer member
        Parser.Config[] cs = c.parser().step(c.initial(), "{\"na".getBytes(StandardCharsets.UTF_8));
        long[] m = c.allowed(cs, 1 << 20, false);
        assertThat(allows(v, m, "me\": 1")).isFalse();
        assertThat(allows(v, m, "me\": \"")).isTrue();
        assertThat(allows(v, m, "e\": 1")).isTrue(); // "nae" is undeclared
        assertThat(allows(v, m, "\": 1")).isFalse(); // "na" is declared
    }

    private static boolean allows(Vocabulary v, long[] mask, String token) {
        byte[] b = token.getBytes(StandardCharsets.UTF_8);
        for (int t = 0; t < v.size(); t++) {
            if (java.util.Arrays.equals(v.bytes(t), b)) {
                return (mask[t >>> 6] & (1L << t)) != 0;
            }
        }
        throw new AssertionError("no token " + token);
    }

    private static boolean run(Lexeme x, String s) {
        int st = x.start();
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            st = x.step(st, b & 0xFF);
            if (st == Lexeme.DEAD) {
                return false;
            }
        }
        return x.accepting(st);
    }

    @Test
    void anUnsupportedAdditionalPropertiesSchemaLeavesTheDeclaredMembersOnly() {
        // as Github_trivial---o73918 (additionalProperties with a keyword the compiler refuses): the declared
        // members still compile, and nothing undeclared is written
        String s = """
                {"type": "object", "properties": {"a": {"type": "integer"}},
                 "additionalProperties": {"$dynamicRef": "#meta"}}""";
        assertThat(accepts(s, "{\"a\": 1}")).isTrue();
        assertThat(accepts(s, "{\"a\": 1, \"b\": 2}")).isFalse();
        assertThat(accepts(s, "{\"a\": 1, \"b\": \"x\"}")).isFalse();
    }

    @Test
    void generationWritesUndeclaredMembersOnlyWhereAdditionalPropertiesSaysSo() {
        String absent = """
                {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}""";
        String open = """
                {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                 "additionalProperties": {"type": "integer"}}""";
        // JSON Schema's reading (MaskBench, validation): an absent additionalProperties allows any other member
        assertThat(GrammarEngineTest.accepts(SchemaCompiler.compile(GrammarEngineTest.schema(absent)),
                "{\"city\": \"Paris\", \"key\": \"set\"}")).isTrue();
        // what a model generates: the declared members only, unless additionalProperties names a schema or true
        Grammar strict = SchemaCompiler.compileForGeneration(GrammarEngineTest.schema(absent), ConstraintLimits.DEFAULT);
        assertThat(GrammarEngineTest.accepts(strict, "{\"city\": \"Paris\"}")).isTrue();
        assertThat(GrammarEngineTest.accepts(strict, "{\"city\": \"Paris\", \"key\": \"set\"}")).isFalse();
        Grammar extra = SchemaCompiler.compileForGeneration(GrammarEngineTest.schema(open), ConstraintLimits.DEFAULT);
        assertThat(GrammarEngineTest.accepts(extra, "{\"city\": \"Paris\", \"n\": 3}")).isTrue();
        assertThat(GrammarEngineTest.accepts(extra, "{\"city\": \"Paris\", \"n\": \"x\"}")).isFalse();
    }
}
