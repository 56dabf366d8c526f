package io.tqserve.template;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Converts the caller's JSON-like values (Java maps, lists, boxed numbers, Jackson trees) into the engine's Python
 * values ({@link Py}): the messages, tools and extra variables a render receives.
 */
final class PyValues {
    private PyValues() {
    }

    /** A deep copy of a Java value as an engine value (Integer -> Long, Float -> Double, arrays -> lists). */
    static Object fromJava(Object v) {
        if (v == null || v instanceof String || v instanceof Boolean || v instanceof Long || v instanceof Double
                || v instanceof PyCallable) {
            return v;
        }
        if (v instanceof Integer || v instanceof Short || v instanceof Byte) {
            return ((Number) v).longValue();
        }
        if (v instanceof Float f) {
            return Double.parseDouble(f.toString());
        }
        if (v instanceof BigDecimal d) {
            return d.doubleValue();
        }
        if (v instanceof java.math.BigInteger b) {
            return b.longValue();
        }
        if (v instanceof Map<?, ?> m) {
            Map<Object, Object> out = new LinkedHashMap<>();
            m.forEach((k, x) -> out.put(fromJava(k), fromJava(x)));
            return out;
        }
        if (v instanceof Collection<?> c) {
            List<Object> out = new ArrayList<>(c.size());
            c.forEach(x -> out.add(fromJava(x)));
            return out;
        }
        if (v instanceof Object[] a) {
            return fromJava(List.of(a));
        }
        if (v instanceof CharSequence s) {
            return s.toString();
        }
        if (v instanceof tools.jackson.databind.JsonNode n) {
            return fromJson(n);
        }
        throw new IllegalArgumentException("not a JSON-like value for a chat template: " + v.getClass().getName());
    }

    /** A Jackson tree as Python's json.loads would give it (objects keep their key order). */
    private static Object fromJson(tools.jackson.databind.JsonNode n) {
        if (n.isObject()) {
            Map<Object, Object> out = new LinkedHashMap<>();
            n.properties().forEach(e -> out.put(e.getKey(), fromJson(e.getValue())));
            return out;
        }
        if (n.isArray()) {
            List<Object> out = new ArrayList<>(n.size());
            n.forEach(x -> out.add(fromJson(x)));
            return out;
        }
        if (n.isString()) {
            return n.asString();
        }
        if (n.isBoolean()) {
            return n.booleanValue();
        }
        if (n.isIntegralNumber() && n.canConvertToLong()) {
            return n.longValue();
        }
        if (n.isNumber()) {
            return n.doubleValue();
        }
        if (n.isNull() || n.isMissingNode()) {
            return null;
        }
        throw new IllegalArgumentException("not a JSON value for a chat template: " + n.getNodeType());
    }
}
