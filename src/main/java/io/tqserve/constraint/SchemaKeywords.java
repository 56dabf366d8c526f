package io.tqserve.constraint;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiFunction;

/**
 * Keyword triage for {@link SchemaCompiler}: which keywords of a schema object constrain the instance (annotations
 * and keywords of no validation vocabulary are dropped, validation keywords that are not enforced are refused by
 * name), and the conjunction of schemas: {@code allOf} branches, and the siblings of {@code $ref},
 * {@code anyOf} and {@code oneOf}, are merged into one schema keyword by keyword. A merged schema is never looser
 * than the conjunction (where two values cannot be combined exactly, the keyword is refused); it may be narrower
 * where the grammar is anyway (e.g. draft 7 ignores the siblings of {@code $ref}, which are applied here).
 */
final class SchemaKeywords {
    /** Keywords the grammar enforces. */
    static final Set<String> KNOWN = Set.of("type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref",
            "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "uniqueItems",
            "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "format",
            "multipleOf", "nullable", "pattern", "prefixItems", "additionalItems", "not", Negation.ABSENT,
            Negation.NOT_STRINGS, Negation.NOT_PATTERNS, "patternProperties", "propertyNames", "minProperties",
            "maxProperties", "dependentRequired", "dependencies");
    /** Validation keywords (drafts 3 to 2020-12) that are not enforced: a schema using one is refused. */
    static final Set<String> REFUSED = Set.of("maxContains", "minContains",
            "if", "dependentSchemas", "contains",
            "unevaluatedItems", "unevaluatedProperties", "$dynamicRef", "$recursiveRef", "disallow",
            "extends", "divisibleBy", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "contentEncoding",
            "contentMediaType", "contentSchema");
    /** Formats some JSON Schema draft defines (a validator may assert them): unsupported ones are refused. */
    static final Set<String> SPEC_FORMATS = Set.of("date-time", "date", "time", "duration", "email", "idn-email",
            "hostname", "idn-hostname", "ipv4", "ipv6", "uri", "uri-reference", "iri", "iri-reference", "uuid",
            "uri-template", "json-pointer", "relative-json-pointer", "regex", "color", "host-name", "ip-address",
            "utc-millisec", "style", "phone");
    /** Most branches a merge of two {@code anyOf}/{@code oneOf} lists may produce (their cross product). */
    static final int MAX_CROSS = 64;

    private SchemaKeywords() {
    }

    /**
     * The keywords of a schema object that constrain the instance, in draft 2020-12 spelling. Keywords of no
     * validation vocabulary (annotations, extensions such as {@code x-...}, misspellings) are dropped: JSON Schema
     * ignores unknown keywords; so is a {@code format} that no draft defines (an annotation). Validation keywords
     * this compiler cannot enforce exactly are refused. Draft 4's boolean {@code exclusiveMinimum}/{@code
     * exclusiveMaximum} become the numeric form; draft 4's array {@code items} becomes {@code prefixItems}.
     */
    static Map<String, Object> normalize(Map<?, ?> raw, String at) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : raw.entrySet()) {
            String key = String.valueOf(e.getKey());
            if (REFUSED.contains(key)) {
                throw unsupported(key, at);
            }
            if (KNOWN.contains(key)) {
                m.put(key, e.getValue());
            }
        }
        for (String idKey : List.of("$id", "id")) {
            // a nested base URI changes what the $refs beneath it point to
            if (!at.equals("#") && raw.get(idKey) instanceof String id && !id.startsWith("#") && hasRef(raw)) {
                throw new UnsupportedSchemaException(idKey, "'" + idKey + "' (at " + at + ") with $refs beneath it "
                        + "is not supported by constrained decoding");
            }
        }
        for (String[] pair : new String[][] {{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}}) {
            if (m.get(pair[0]) instanceof Boolean exclusive) {
                m.remove(pair[0]);
                if (exclusive && m.containsKey(pair[1])) {
                    m.put(pair[0], m.remove(pair[1]));
                }
            }
        }
        if (m.get("format") instanceof String f && !SPEC_FORMATS.contains(f) && !Formats.SUPPORTED.contains(f)
                && !NUMERIC_FORMATS.contains(f)) {
            m.remove("format"); // not a format of any draft: an annotation, as validators treat it
        }
        if (m.get("items") instanceof List<?> tuple) {
            if (m.containsKey("prefixItems")) {
                throw unsupported("items", at);
            }
            m.put("prefixItems", tuple);
            m.remove("items");
            if (m.containsKey("additionalItems")) {
                m.put("items", m.remove("additionalItems"));
            }
        }
        m.remove("additionalItems"); // beside a schema-valued items it has no effect
        return m;
    }

    /** Integer and number formats (OpenAPI's): enforced as ranges where known, else annotations. */
    static final Set<String> NUMERIC_FORMATS = Set.of("int32", "int64", "float", "double");

    static boolean hasRef(Object schema) {
        if (schema instanceof Map<?, ?> m) {
            if (m.containsKey("$ref")) {
                return true;
            }
            for (Object v : m.values()) {
                if (hasRef(v)) {
                    return true;
                }
            }
        } else if (schema instanceof List<?> l) {
            for (Object v : l) {
                if (hasRef(v)) {
                    return true;
                }
            }
        }
        return false;
    }

    static UnsupportedSchemaException unsupported(String keyword, String at) {
        return new UnsupportedSchemaException(keyword, "the JSON schema keyword '" + keyword + "' (at " + at
                + ") is not supported by constrained decoding");
    }

    /** {@code {"allOf": [a, b]}}: the conjunction, merged when it is compiled. */
    static Map<String, Object> both(Object a, Object b) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("allOf", List.of(a, b));
        return m;
    }

    /**
     * The conjunction of two normalized schemas without {@code allOf} or {@code $ref} at their top level, or null
     * when no instance satisfies both (disjoint types, enums without a common value, a forbidden required
     * property). Keywords both carry are combined (bounds: the tighter; properties: each shared one as the
     * conjunction; enums: the common values; anyOf/oneOf: the cross product of their branches).
     */
    static Map<String, Object> merge(Map<String, Object> a, Map<String, Object> b, String at) {
        Map<String, Object> out = new LinkedHashMap<>(a);
        for (Map.Entry<String, Object> e : b.entrySet()) {
            String k = e.getKey();
            Object y = e.getValue();
            if (!out.containsKey(k)) {
                out.put(k, y);
                continue;
            }
            Object x = out.get(k);
            if (Literals.json(x).equals(Literals.json(y))) {
                continue;
            }
            Object v = switch (k) {
                case "type" -> {
                    Set<String> t = typeSet(x);
                    Set<String> u = typeSet(y);
                    Set<String> keep = new LinkedHashSet<>();
                    for (String s : t) {
                        if (u.contains(s) || s.equals("integer") && u.contains("number")) {
                            keep.add(s);
                        } else if (s.equals("number") && u.contains("integer")) {
                            keep.add("integer");
                        }
                    }
                    yield keep.isEmpty() ? null : new ArrayList<>(keep);
                }
                case "enum", "const" -> {
                    List<Object> common = new ArrayList<>();
                    Set<String> other = new HashSet<>();
                    values(y).forEach(o -> other.add(Literals.json(o)));
                    for (Object o : values(x)) {
                        if (other.contains(Literals.json(o))) {
                            common.add(o);
                        }
                    }
                    yield common.isEmpty() ? null : k.equals("const") ? common.getFirst() : common;
                }
                case "required" -> {
                    Set<Object> r = new LinkedHashSet<>((List<?>) x);
                    r.addAll((List<?>) y);
                    yield new ArrayList<>(r);
                }
                case "properties" -> {
                    Map<String, Object> p = new LinkedHashMap<>();
                    ((Map<?, ?>) x).forEach((n, s) -> p.put(String.valueOf(n), s));
                    ((Map<?, ?>) y).forEach((n, s) -> p.merge(String.valueOf(n), s, SchemaKeywords::both));
                    yield p;
                }
                case "additionalProperties", "items" -> Boolean.FALSE.equals(x) || Boolean.FALSE.equals(y)
                        ? Boolean.FALSE : Boolean.TRUE.equals(x) ? y : Boolean.TRUE.equals(y) ? x : both(x, y);
                case "minItems", "minLength", "minProperties", "minimum", "exclusiveMinimum" -> tighter(x, y, k, at, true);
                case "maxItems", "maxLength", "maxProperties", "maximum", "exclusiveMaximum" -> tighter(x, y, k, at, false);
                case "uniqueItems" -> Boolean.TRUE.equals(x) || Boolean.TRUE.equals(y);
                case "nullable" -> Boolean.TRUE.equals(x) && Boolean.TRUE.equals(y);
                case "anyOf", "oneOf" -> cross((List<?>) x, (List<?>) y, k, at);
                case "not" -> Map.of("anyOf", List.of(x, y)); // NOT x AND NOT y = NOT (x OR y)
                case Negation.ABSENT, Negation.NOT_STRINGS, Negation.NOT_PATTERNS -> {
                    if (!(x instanceof List<?> xl) || !(y instanceof List<?> yl)) {
                        throw new UnsupportedSchemaException("not", "an internal keyword of not at " + at
                                + " is not a list");
                    }
                    Set<Object> all = new LinkedHashSet<>(xl);
                    all.addAll(yl);
                    yield new ArrayList<>(all);
                }
                default -> throw new UnsupportedSchemaException(k, "'" + k + "' with two different values in the "
                        + "conjunction (allOf, or beside $ref/anyOf/oneOf) at " + at + " is not supported by "
                        + "constrained decoding");
            };
            if (v == null) {
                return null;
            }
            out.put(k, v);
        }
        if (patternsOpen(a, b) || patternsOpen(b, a)) {
            throw new UnsupportedSchemaException("patternProperties", "patternProperties in a conjunction (allOf, "
                    + "or beside $ref/anyOf/oneOf) at " + at + " with additionalProperties in another part is not "
                    + "supported by constrained decoding");
        }
        if (!closeOver(out, a, b) || !closeOver(out, b, a)) {
            return null;
        }
        return out;
    }

    /**
     * Whether {@code x}'s patternProperties would exempt names from {@code y}'s additionalProperties in the merged
     * schema: names matching them are not additional there, but are in {@code y}.
     */
    private static boolean patternsOpen(Map<String, Object> x, Map<String, Object> y) {
        Object addl = y.get("additionalProperties");
        return x.get("patternProperties") instanceof Map<?, ?> pp && !pp.isEmpty() && addl != null
                && !Boolean.TRUE.equals(addl) && !Literals.json(pp).equals(Literals.json(y.get("patternProperties")));
    }

    /**
     * {@code from}'s additionalProperties applies to the properties {@code other} declares and {@code from} does
     * not and that match none of its patternProperties: their schemas in {@code out} become the conjunction with
     * it (false: the property may not appear).
     * False when a required property is so forbidden.
     */
    private static boolean closeOver(Map<String, Object> out, Map<String, Object> from, Map<String, Object> other) {
        Object addl = from.get("additionalProperties");
        if (addl == null || Boolean.TRUE.equals(addl) || !(other.get("properties") instanceof Map<?, ?> op)) {
            return true;
        }
        Map<?, ?> own = from.get("properties") instanceof Map<?, ?> fp ? fp : Map.of();
        Map<String, Object> props = new LinkedHashMap<>(); // a copy: the schema's own maps are never modified
        ((Map<?, ?>) out.get("properties")).forEach((n, v) -> props.put(String.valueOf(n), v));
        out.put("properties", props);
        Set<String> required = new HashSet<>();
        if (out.get("required") instanceof List<?> r) {
            r.forEach(x -> required.add(String.valueOf(x)));
        }
        for (Object n : op.keySet()) {
            String name = String.valueOf(n);
            if (!own.containsKey(name) && !matchesPattern(from, name)) {
                if (Boolean.FALSE.equals(addl)) {
                    if (required.contains(name)) {
                        return false;
                    }
                    props.remove(name);
                } else {
                    props.put(name, both(props.get(name), addl));
                }
            }
        }
        return true;
    }

    /** Whether {@code name} matches one of the patternProperties of {@code schema} (then it is not additional). */
    private static boolean matchesPattern(Map<String, Object> schema, String name) {
        if (schema.get("patternProperties") instanceof Map<?, ?> pp) {
            for (Object p : pp.keySet()) {
                if (EcmaRegex.search(String.valueOf(p), ConstraintLimits.DEFAULT.maxLexemeStates()).run(name)) {
                    return true;
                }
            }
        }
        return false;
    }

    private static Object tighter(Object x, Object y, String k, String at, boolean lower) {
        BigDecimal p = SchemaCompiler.decimal(x, k, at);
        BigDecimal q = SchemaCompiler.decimal(y, k, at);
        return (p.compareTo(q) >= 0) == lower ? x : y;
    }

    private static List<Object> cross(List<?> x, List<?> y, String k, String at) {
        if ((long) x.size() * y.size() > MAX_CROSS) {
            throw new ConstraintBudgetException(k, "two " + k + " lists in a conjunction at " + at + " make more than "
                    + MAX_CROSS + " branches");
        }
        List<Object> out = new ArrayList<>();
        for (Object p : x) {
            for (Object q : y) {
                out.add(both(p, q));
            }
        }
        return out;
    }

    static Set<String> typeSet(Object type) {
        Set<String> s = new LinkedHashSet<>();
        if (type instanceof List<?> l) {
            l.forEach(t -> s.add(String.valueOf(t)));
        } else {
            s.add(String.valueOf(type));
        }
        return s;
    }

    private static List<?> values(Object v) {
        return v instanceof List<?> l ? l : java.util.Collections.singletonList(v);
    }

    /** Folds {@code parts} with {@code merge}; null as soon as one merge is unsatisfiable. */
    static Map<String, Object> mergeAll(List<Map<String, Object>> parts,
            BiFunction<Map<String, Object>, Map<String, Object>, Map<String, Object>> merge) {
        Map<String, Object> acc = new LinkedHashMap<>();
        for (Map<String, Object> p : parts) {
            acc = merge.apply(acc, p);
            if (acc == null) {
                return null;
            }
        }
        return acc;
    }

    static String typeOf(Object v) {
        return switch (v) {
            case null -> "null";
            case String s -> "string";
            case Boolean b -> "boolean";
            case Integer i -> "integer";
            case Long l -> "integer";
            case java.math.BigInteger b -> "integer";
            case Number n -> new BigDecimal(n.toString()).stripTrailingZeros().scale() <= 0 ? "integer" : "number";
            case List<?> l -> "array";
            case Map<?, ?> mm -> "object";
            default -> "unknown";
        };
    }

    /** The declared types (with nullable), or null when the schema names none. */
    static Set<String> types(Map<?, ?> m, String at) {
        Object type = m.get("type");
        Set<String> types = new HashSet<>();
        if (type instanceof String s) {
            types.add(s);
        } else if (type instanceof List<?> l) {
            l.forEach(t -> types.add(String.valueOf(t)));
        } else if (type != null) {
            throw new UnsupportedSchemaException("type", "type at " + at + " must be a string or an array");
        } else {
            return null;
        }
        if (Boolean.TRUE.equals(m.get("nullable"))) {
            types.add("null");
        }
        return types;
    }
}
