package io.tqserve.template;

import io.tqserve.template.Evaluator.Arguments;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Jinja2's built-in tests ({@code x is defined}, {@code x is string}, {@code n is divisibleby 3}, ...). */
final class Tests {
    @FunctionalInterface
    private interface Test {
        boolean apply(Object value, Arguments a);
    }

    private static final Map<String, Test> TESTS = new HashMap<>();

    static {
        TESTS.put("defined", (v, a) -> !(v instanceof Undefined));
        TESTS.put("undefined", (v, a) -> v instanceof Undefined);
        TESTS.put("none", (v, a) -> v == null);
        TESTS.put("boolean", (v, a) -> v instanceof Boolean);
        TESTS.put("true", (v, a) -> Boolean.TRUE.equals(v));
        TESTS.put("false", (v, a) -> Boolean.FALSE.equals(v));
        TESTS.put("integer", (v, a) -> v instanceof Long);
        TESTS.put("float", (v, a) -> v instanceof Double);
        TESTS.put("number", (v, a) -> Py.isNumber(v));
        TESTS.put("string", (v, a) -> v instanceof String || v instanceof Markup);
        TESTS.put("mapping", (v, a) -> v instanceof Map);
        TESTS.put("iterable", (v, a) -> v instanceof String || v instanceof List || v instanceof Map
                || v instanceof Undefined || v instanceof PyIterator);
        TESTS.put("sequence", (v, a) -> v instanceof String || v instanceof List || v instanceof Map
                || v instanceof Undefined);
        TESTS.put("callable", (v, a) -> v instanceof PyCallable);
        TESTS.put("sameas", (v, a) -> v == a.get(0, "other", null) || (v != null && v.equals(a.get(0, "other", null))
                && (v instanceof Boolean)));
        TESTS.put("escaped", (v, a) -> v instanceof Markup);
        TESTS.put("in", (v, a) -> Py.contains(a.get(0, "seq", null), v));
        TESTS.put("even", (v, a) -> Py.integer(number(v)) % 2 == 0);
        TESTS.put("odd", (v, a) -> Math.floorMod(Py.integer(number(v)), 2) == 1);
        TESTS.put("divisibleby", (v, a) -> Math.floorMod(Py.integer(number(v)), Py.integer(a.get(0, "num", 1L))) == 0);
        TESTS.put("eq", (v, a) -> Py.eq(v, a.get(0, "other", null)));
        TESTS.put("ne", (v, a) -> !Py.eq(v, a.get(0, "other", null)));
        TESTS.put("lt", (v, a) -> Py.compare(v, a.get(0, "other", null), "<") < 0);
        TESTS.put("le", (v, a) -> Py.compare(v, a.get(0, "other", null), "<=") <= 0);
        TESTS.put("gt", (v, a) -> Py.compare(v, a.get(0, "other", null), ">") > 0);
        TESTS.put("ge", (v, a) -> Py.compare(v, a.get(0, "other", null), ">=") >= 0);
        TESTS.put("lower", (v, a) -> {
            String s = Py.str(v);
            return s.codePoints().anyMatch(Character::isLowerCase) && s.codePoints().noneMatch(Character::isUpperCase);
        });
        TESTS.put("upper", (v, a) -> {
            String s = Py.str(v);
            return s.codePoints().anyMatch(Character::isUpperCase) && s.codePoints().noneMatch(Character::isLowerCase);
        });
        TESTS.put("filter", (v, a) -> v instanceof String s && Filters.exists(s));
        TESTS.put("test", (v, a) -> v instanceof String s && TESTS.containsKey(s));
        alias("eq", "equalto", "==");
        alias("ne", "!=");
        alias("lt", "lessthan", "<");
        alias("le", "<=");
        alias("gt", "greaterthan", ">");
        alias("ge", ">=");
    }

    private Tests() {
    }

    private static void alias(String name, String... aliases) {
        for (String a : aliases) {
            TESTS.put(a, TESTS.get(name));
        }
    }

    private static Object number(Object v) {
        if (v instanceof Undefined u) {
            throw u.fail();
        }
        if (!(v instanceof Long || v instanceof Boolean || v instanceof Double)) {
            throw RenderException.type("unsupported operand type(s) for %: '" + Py.typeName(v) + "' and 'int'");
        }
        return v;
    }

    static boolean exists(String name) {
        return TESTS.containsKey(name);
    }

    static boolean apply(String name, Object value, Arguments args, Evaluator ev) {
        Test t = TESTS.get(name);
        if (t == null) {
            throw new RenderException("TemplateRuntimeError", "No test named '" + name + "' found.");
        }
        return t.apply(value, args);
    }
}
