package io.tqserve.constraint;

import static io.tqserve.constraint.GrammarEngineTest.accepts;
import static io.tqserve.constraint.GrammarEngineTest.check;
import static io.tqserve.constraint.GrammarEngineTest.validator;
import static org.assertj.core.api.Assertions.assertThat;

import com.networknt.schema.InputFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * An object's members in any order ({@link AnyOrder}): each declared member at most once, the required ones all,
 * undeclared ones anywhere among them. The schemas and valid instances are excerpts of MaskBench
 * (guidance-ai/jsonschemabench, {@code maskbench/data}, the file named in each test) whose instances list members
 * in another order than the schema; every expectation is checked against a draft 2020-12 validator.
 */
class AnyOrderTest {
    @Test
    void membersComeInAnyOrderEachOnceWithTheRequiredOnesAll() {
        // Github_easy---o10094
        check("""
                {"additionalProperties": false, "properties": {
                   "session": {"properties": {"password": {"type": "string"}, "username": {"type": "string"}},
                     "required": ["username", "password"], "type": "object"},
                   "settings": {"type": "object"},
                   "static": {"properties": {"component": {"type": "string"}, "vendor": {"type": "string"}},
                     "required": ["vendor", "component"], "type": "object"}},
                 "required": ["static", "session", "settings"], "type": "object"}""",
                List.of("{\"session\": {\"username\": \"admin\", \"password\": \"password123\"}, \"settings\": {}, "
                                + "\"static\": {\"vendor\": \"Example Vendor\", \"component\": \"Example Component\"}}",
                        "{\"static\": {\"component\": \"c\", \"vendor\": \"v\"}, \"settings\": {\"x\": 1}, "
                                + "\"session\": {\"password\": \"p\", \"username\": \"u\"}}"),
                List.of("{\"session\": {\"username\": \"admin\", \"password\": \"p\"}, \"settings\": {}, "
                                + "\"static\": {\"vendor\": 12345, \"component\": \"Example Component\"}}",
                        "{\"session\": {\"username\": \"\", \"password\": \"p\"}, \"settings\": {}, "
                                + "\"static\": {\"vendor\": \"v\", \"component\": \"c\"}, \"extra\": \"x\"}",
                        // a required member missing
                        "{\"settings\": {}, \"static\": {\"vendor\": \"v\", \"component\": \"c\"}}"));
        // a member twice: JSON leaves its meaning open (the validator takes the last), the grammar never writes it
        assertThat(accepts("""
                {"type": "object", "properties": {"password": {"type": "string"}, "username": {"type": "string"}}}""",
                "{\"username\": \"u\", \"password\": \"p\", \"username\": \"u\"}")).isFalse();
    }

    @Test
    void undeclaredMembersMayComeAnywhere() {
        // Github_medium---o66606 (its Command definition), with additionalProperties opened
        check("""
                {"type": "object", "required": ["path"], "properties": {"path": {"type": "string", "minLength": 1},
                   "args": {"type": ["array", "null"], "items": {"type": "string"}},
                   "working_dir": {"type": ["null", "string"]}}, "additionalProperties": {"type": "integer"}}""",
                List.of("{\"x\": 1, \"args\": [\"build\"], \"y\": 2, \"path\": \"make\"}",
                        "{\"working_dir\": null, \"path\": \"m\", \"z\": 3}"),
                List.of("{\"x\": 1, \"args\": [\"build\"]}", "{\"path\": \"m\", \"x\": \"1\"}",
                        "{\"path\": \"\"}"));
    }

    @Test
    void manyMembersKeepTheSchemasOrder() {
        Map<String, Object> props = new LinkedHashMap<>();
        for (int i = 0; i <= AnyOrder.MAX_MEMBERS; i++) {
            props.put("p" + i, Map.of("type", "integer"));
        }
        Grammar g = SchemaCompiler.compile(Map.of("type", "object", "properties", props, "required", List.of("p0")));
        assertThat(accepts(g, "{\"p0\": 1, \"p5\": 2, \"x\": 3}")).isTrue();
        assertThat(accepts(g, "{\"p5\": 2, \"p0\": 1}")).isFalse(); // valid, but beyond the members tracked
        assertThat(accepts(g, "{\"p0\": 1, \"p0\": 2}")).isFalse();
        props.remove("p0");
        Grammar h = SchemaCompiler.compile(Map.of("type", "object", "properties", props, "required", List.of("p1")));
        assertThat(accepts(h, "{\"p32\": 2, \"p1\": 1, \"p7\": 1, \"x\": []}")).isTrue();
        assertThat(accepts(h, "{\"p32\": 2, \"p7\": 1}")).isFalse();
    }

    @Test
    void tightBudgetsStillWriteEveryRequiredMember() {
        // the closing budget counts the required members not written yet, whatever the order so far
        String schema = """
                {"type": "object", "properties": {"a": {"type": "integer"}, "bb": {"type": "string"},
                 "c": {"type": "boolean"}}, "required": ["bb", "c"]}""";
        TokenConstraint c = new TokenConstraint(SchemaCompiler.compile(GrammarEngineTest.schema(schema)),
                TokenConstraintTest.vocabulary());
        java.util.SplittableRandom r = new java.util.SplittableRandom(3);
        for (int i = 0; i < 100; i++) {
            String out = GrammarEngineTest.walk(c, r, c.minTokens() + r.nextInt(0, 8));
            assertThat(validator(schema).validate(out, InputFormat.JSON)).as(out).isEmpty();
        }
    }
}
