package io.tqserve.constraint;

import dk.brics.automaton.Automaton;
import dk.brics.automaton.BasicAutomata;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * {@code not} as positive schemas: {@code m AND NOT n} becomes a list of schemas whose union holds only instances
 * valid against both (never looser; narrower where the complement has no positive form, as the object grammar
 * already is). The negation is pushed into the keywords: {@code NOT (a AND b)} is {@code NOT a OR NOT b} keyword
 * by keyword, {@code NOT anyOf} is the conjunction of the negated branches, {@code NOT allOf} their union,
 * {@code NOT NOT x} is {@code x}; a type becomes the other types; {@code required} a member that is absent
 * ({@link #ABSENT}); {@code properties} a present member whose value fails its schema; {@code enum}/{@code const}
 * the other values of their types (strings by {@link #NOT_STRINGS}, booleans; numbers, objects and arrays named
 * in the enum drop their type); {@code pattern} the strings it finds no match in ({@link #NOT_PATTERNS}, the
 * complement of its automaton); length, item-count and numeric bounds the opposite bound. A keyword of one type
 * (all but type, enum, const and the combinators) holds for every value of the other types, so its negation holds
 * only values of its type: objects missing a required member, not non-objects. Other keywords (multipleOf,
 * patternProperties, if, ...) keep no positive form (narrower, never looser). A {@code oneOf} negated keeps the
 * instances matching
 * no branch (those matching two are dropped). Every result is merged with {@code m} right away
 * ({@link SchemaKeywords#merge}), so branches that contradict {@code m} (another type, a required member now
 * absent) are pruned before they multiply.
 */
final class Negation {
    /** Internal keyword: member names an object must not have (a NUL-led name no schema author writes). */
    static final String ABSENT = "\u0000absent";
    /** Internal keyword: string values (as a list) a string must not equal. */
    static final String NOT_STRINGS = "\u0000notStrings";
    /** Internal keyword: patterns (as a list) a string must contain no match of. */
    static final String NOT_PATTERNS = "\u0000notPatterns";
    /** Internal keywords, known to {@link SchemaKeywords#normalize}. */
    static final Set<String> INTERNAL = Set.of(ABSENT, NOT_STRINGS, NOT_PATTERNS);

    private static final List<String> TYPES = List.of("null", "boolean", "object", "array", "number", "string");
    /** Most positive schemas one {@code not} (with the schema beside it) may become. */
    static final int MAX_BRANCHES = 64;
    /** Most levels of not/$ref within one negation. */
    private static final int MAX_DEPTH = 32;
    /** Most schemas negated within one negation (recursive $refs under oneOf could otherwise fan out). */
    private static final int MAX_STEPS = 4096;
    /** Most levels of members whose values a negation looks into (a failing member of a failing member ...). */
    private static final int MAX_MEMBER_DEPTH = 3;

    private final Function<String, Object> resolve;
    private final String at;
    private int depth;
    private int steps;
    private int members;
    /**
     * Set by a keyword's negation to a schema (m, or m with a member kept absent) whose every instance satisfies
     * the negation whatever follows: it stands alone for the union.
     */
    private Map<String, Object> covered;

    private Negation(Function<String, Object> resolve, String at) {
        this.resolve = resolve;
        this.at = at;
    }

    /**
     * {@code m} (normalized and flattened, without {@code not}) AND NOT {@code n}: the schemas whose union is the
     * instances allowed; an empty list when none is.
     */
    static List<Map<String, Object>> and(Map<String, Object> m, Object n, Function<String, Object> resolve,
            String at) {
        return new Negation(resolve, at).under(m, n);
    }

    private List<Map<String, Object>> under(Map<String, Object> m, Object n) {
        if (++steps > MAX_STEPS) {
            throw new ConstraintBudgetException("not", "not at " + at + " takes more than " + MAX_STEPS
                    + " steps to push into the schema");
        }
        if (++depth > MAX_DEPTH) {
            throw new UnsupportedSchemaException("not", "not/$ref at " + at + " nest more than " + MAX_DEPTH
                    + " levels");
        }
        try {
            return bounded(negate(m, n));
        } finally {
            depth--;
        }
    }

    private List<Map<String, Object>> bounded(List<Map<String, Object>> out) {
        if (out.size() > MAX_BRANCHES) {
            throw new ConstraintBudgetException("not", "not at " + at + " becomes more than " + MAX_BRANCHES
                    + " branches");
        }
        return out;
    }

    private List<Map<String, Object>> negate(Map<String, Object> m, Object n) {
        Map<String, Object> outer = covered; // a caller's finding survives this nested negation
        try {
            return negateKeywords(m, n);
        } finally {
            covered = outer;
        }
    }

    private List<Map<String, Object>> negateKeywords(Map<String, Object> m, Object n) {
        List<Map<String, Object>> out = new ArrayList<>();
        if (Boolean.TRUE.equals(n)) {
            return out;
        }
        if (Boolean.FALSE.equals(n)) {
            out.add(m);
            return out;
        }
        if (!(n instanceof Map<?, ?> raw)) {
            throw new UnsupportedSchemaException("not", "not at " + at + " must be an object or a boolean");
        }
        Map<String, Object> k = keywords(raw);
        if (k.isEmpty()) {
            return out; // NOT {}: nothing
        }
        if (Boolean.TRUE.equals(k.remove("nullable")) && k.containsKey("type")) {
            // NOT (null OR rest) = NOT null AND NOT rest
            Map<String, Object> notNull = conj(m, Map.of("type", others(Set.of("null"))));
            return notNull == null ? out : under(notNull, k);
        }
        for (Map.Entry<String, Object> e : k.entrySet()) {
            covered = null;
            List<Map<String, Object>> part = one(m, e.getKey(), e.getValue(), k);
            if (covered != null) {
                // m (or m with a member kept absent) already excludes n: that one branch stands for the union
                return List.of(covered);
            }
            out.addAll(part);
        }
        return out;
    }

    /** The keywords of {@code raw} that constrain the instance, draft 4's boolean exclusive bounds made numeric. */
    private static Map<String, Object> keywords(Map<?, ?> raw) {
        Map<String, Object> k = new LinkedHashMap<>();
        raw.forEach((key, v) -> {
            String s = String.valueOf(key);
            if (SchemaKeywords.KNOWN.contains(s) || SchemaKeywords.REFUSED.contains(s) || s.equals("minProperties")
                    || s.equals("maxProperties") || s.equals("then") || s.equals("else")) {
                k.put(s, v);
            }
        });
        for (String[] pair : new String[][] {{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}}) {
            if (k.get(pair[0]) instanceof Boolean exclusive) {
                k.remove(pair[0]);
                if (exclusive && k.containsKey(pair[1])) {
                    k.put(pair[0], k.remove(pair[1]));
                }
            }
        }
        return k;
    }

    /** {@code m} AND NOT {key: v} ({@code all}: the whole negated schema, for keywords read together). */
    private List<Map<String, Object>> one(Map<String, Object> m, String key, Object v, Map<String, Object> all) {
        List<Map<String, Object>> out = new ArrayList<>();
        switch (key) {
            case "type" -> add(out, m, Map.of("type", others(SchemaKeywords.typeSet(v))));
            case "enum", "const" -> notValues(out, m, key.equals("const") ? List.of(v) : (List<?>) listOf(v, key));
            case "required" -> {
                for (Object name : (List<?>) listOf(v, key)) {
                    if (onlyObjects(m) && !m.containsKey("anyOf") && !m.containsKey("oneOf")
                            && !m.containsKey("enum") && !m.containsKey("const")
                            && m.get("properties") instanceof Map<?, ?> && !declared(m).contains(
                            String.valueOf(name))) {
                        // a member m does not declare: kept absent (through later conjunctions too) as the one
                        // branch, leaving out the others' instances (fewer branches; narrower, never looser)
                        covered = conj(m, Map.of(ABSENT, List.of(String.valueOf(name))));
                        return out;
                    }
                    add(out, m, Map.of("type", List.of("object"), ABSENT, List.of(String.valueOf(name))));
                }
            }
            case "properties" -> {
                if (v instanceof Map<?, ?> props) {
                    for (Map.Entry<?, ?> p : props.entrySet()) {
                        invalidMember(out, m, String.valueOf(p.getKey()), p.getValue());
                    }
                }
            }
            case "pattern" -> {
                add(out, m, Map.of("type", List.of("string"), NOT_PATTERNS, List.of(v)));
            }
            case "minLength", "maxLength" -> opposite(out, m, "string", key, v, "minLength", "maxLength");
            case "minItems", "maxItems" -> opposite(out, m, "array", key, v, "minItems", "maxItems");
            case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum" -> {
                if (v instanceof Number) {
                    String flip = switch (key) {
                        case "minimum" -> "exclusiveMaximum";
                        case "maximum" -> "exclusiveMinimum";
                        case "exclusiveMinimum" -> "maximum";
                        default -> "minimum";
                    };
                    add(out, m, Map.of("type", List.of("number"), flip, v));
                }
            }
            case "additionalProperties" -> {
                if (!all.containsKey("patternProperties")) {
                    undeclaredMember(out, m, v, all.get("properties") instanceof Map<?, ?> p ? p : Map.of());
                }
            }
            case "not" -> add(out, m, v); // NOT NOT x = x
            case "$ref" -> {
                if (all.size() == 1) {
                    out.addAll(under(m, resolve.apply(String.valueOf(v))));
                } else {
                    out.addAll(under(m, Map.of("$ref", v))); // the siblings are negated on their own
                }
            }
            case "allOf" -> {
                for (Object branch : (List<?>) listOf(v, key)) {
                    out.addAll(under(m, branch));
                }
            }
            case "anyOf", "oneOf" -> {
                // NOT anyOf: no branch matches; NOT oneOf: no branch matches (two matching is left out: narrower)
                List<Map<String, Object>> acc = List.of(m);
                for (Object branch : (List<?>) listOf(v, key)) {
                    List<Map<String, Object>> next = new ArrayList<>();
                    for (Map<String, Object> x : acc) {
                        next.addAll(under(x, branch));
                    }
                    acc = bounded(next);
                }
                out.addAll(acc);
            }
            default -> {
                // multipleOf, patternProperties, if/then/else, ...: a keyword of one type holds for every value of
                // the others, so its negation is values of its type only; none is kept (narrower, never looser)
            }
        }
        return out;
    }

    /** NOT (enum values): the values of types none of them has, other strings, the other boolean. */
    private void notValues(List<Map<String, Object>> out, Map<String, Object> m, List<?> values) {
        Set<String> typed = new LinkedHashSet<>();
        List<String> strings = new ArrayList<>();
        Set<Boolean> booleans = new LinkedHashSet<>();
        for (Object x : values) {
            String t = SchemaKeywords.typeOf(x);
            typed.add(t.equals("integer") ? "number" : t);
            if (x instanceof String s) {
                strings.add(s);
            } else if (x instanceof Boolean b) {
                booleans.add(b);
            }
        }
        add(out, m, Map.of("type", others(typed)));
        if (!strings.isEmpty()) {
            add(out, m, Map.of("type", List.of("string"), NOT_STRINGS, strings));
        }
        if (booleans.size() == 1) {
            add(out, m, Map.of("const", !booleans.iterator().next()));
        }
    }

    /**
     * NOT additionalProperties: objects with a member outside {@code declared} whose value fails {@code schema}
     * (any value when it is false); the members tried are those {@code m} declares.
     */
    private void undeclaredMember(List<Map<String, Object>> out, Map<String, Object> m, Object schema,
            Map<?, ?> declared) {
        for (String name : declared(m)) {
            if (declared.containsKey(name)) {
                continue;
            }
            if (Boolean.FALSE.equals(schema)) {
                if (requires(m, name)) {
                    covered = m;
                    return;
                }
                add(out, m, Map.of("type", List.of("object"), "required", List.of(name)));
            } else {
                invalidMember(out, m, name, schema);
            }
        }
    }

    /** The member names {@code m}'s object grammar may write: its properties and required ones. */
    private static Set<String> declared(Map<String, Object> m) {
        Set<String> names = new LinkedHashSet<>();
        if (m.get("properties") instanceof Map<?, ?> p) {
            p.keySet().forEach(n -> names.add(String.valueOf(n)));
        }
        if (m.get("required") instanceof List<?> r) {
            r.forEach(n -> names.add(String.valueOf(n)));
        }
        return names;
    }

    /** Whether every instance of {@code m} is an object with member {@code name}. */
    private static boolean requires(Map<String, Object> m, String name) {
        return m.get("required") instanceof List<?> r && r.contains(name) && onlyObjects(m);
    }

    private static boolean onlyObjects(Map<String, Object> m) {
        return m.containsKey("type") && SchemaKeywords.typeSet(m.get("type")).equals(Set.of("object"))
                && !Boolean.TRUE.equals(m.get("nullable"));
    }

    /** Objects having member {@code name} with a value that fails {@code schema}. */
    private void invalidMember(List<Map<String, Object>> out, Map<String, Object> m, String name, Object schema) {
        if (requires(m, name) && m.get("properties") instanceof Map<?, ?> p && p.containsKey(name)
                && disjoint(p.get(name), schema)) {
            covered = m; // m's value of name never satisfies schema
            return;
        }
        if (members >= MAX_MEMBER_DEPTH) {
            return; // deeper members (a recursive schema's) are not negated: narrower, never looser
        }
        List<Map<String, Object>> bad;
        members++;
        try {
            bad = under(new LinkedHashMap<>(), schema);
        } finally {
            members--;
        }
        if (bad.isEmpty()) {
            return;
        }
        Object value = bad.size() == 1 ? bad.getFirst() : Map.of("anyOf", new ArrayList<Object>(bad));
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("type", List.of("object"));
        d.put("required", List.of(name));
        d.put("properties", Map.of(name, value));
        add(out, m, d);
    }

    private void opposite(List<Map<String, Object>> out, Map<String, Object> m, String type, String key, Object v,
            String min, String max) {
        if (!(v instanceof Number num) || new BigDecimal(num.toString()).stripTrailingZeros().scale() > 0) {
            return;
        }
        long n = num.longValue();
        if (key.equals(min) && n > 0) {
            add(out, m, Map.of("type", List.of(type), max, n - 1));
        } else if (key.equals(max) && n >= 0 && n < Integer.MAX_VALUE) {
            add(out, m, Map.of("type", List.of(type), min, n + 1));
        }
    }

    /** Whether no value satisfies both schemas, as far as their constants and types tell. */
    private static boolean disjoint(Object a, Object b) {
        if (OneOfCheck.disjointLiterals(a, b)) {
            return true;
        }
        if (a instanceof Map<?, ?> x && b instanceof Map<?, ?> y) {
            Set<String> t = typesOf(x);
            Set<String> u = typesOf(y);
            if (t != null && u != null) {
                for (String s : t) {
                    if (u.contains(s) || s.equals("integer") && u.contains("number")
                            || s.equals("number") && u.contains("integer")) {
                        return false;
                    }
                }
                return true;
            }
        }
        return false;
    }

    /** The types a schema's values may have, from type, const or enum; null when unknown. */
    private static Set<String> typesOf(Map<?, ?> m) {
        if (m.containsKey("$ref") || m.containsKey("allOf") || m.containsKey("anyOf") || m.containsKey("oneOf")) {
            return null;
        }
        if (m.containsKey("type")) {
            Set<String> t = new LinkedHashSet<>(SchemaKeywords.typeSet(m.get("type")));
            if (Boolean.TRUE.equals(m.get("nullable"))) {
                t.add("null");
            }
            return t;
        }
        Set<String> t = new LinkedHashSet<>();
        if (m.containsKey("const")) {
            t.add(SchemaKeywords.typeOf(m.get("const")));
        } else if (m.get("enum") instanceof List<?> l) {
            l.forEach(x -> t.add(SchemaKeywords.typeOf(x)));
        } else {
            return null;
        }
        return t;
    }

    private static Object listOf(Object v, String key) {
        if (!(v instanceof List<?>)) {
            throw new UnsupportedSchemaException(key, key + " inside not must be an array");
        }
        return v;
    }

    /** The JSON types outside {@code types} ({@code integer} takes {@code number} with it: narrower). */
    static List<String> others(Set<String> types) {
        List<String> out = new ArrayList<>();
        for (String t : TYPES) {
            if (!types.contains(t) && !(t.equals("number") && types.contains("integer"))) {
                out.add(t);
            }
        }
        return out;
    }

    /**
     * The strings {@link #NOT_STRINGS} and {@link #NOT_PATTERNS} of {@code m} rule out, as one deterministic
     * automaton over characters; null when {@code m} rules none out.
     */
    static Automaton excludedStrings(Map<?, ?> m, String at, ConstraintLimits limits) {
        List<?> strings = list(m.get(NOT_STRINGS), at);
        List<?> patterns = list(m.get(NOT_PATTERNS), at);
        if (strings.isEmpty() && patterns.isEmpty()) {
            return null;
        }
        List<Automaton> parts = new ArrayList<>();
        if (!strings.isEmpty()) {
            java.util.TreeSet<String> s = new java.util.TreeSet<>(); // sorted, no repeats: as makeStringUnion needs
            strings.forEach(x -> s.add(String.valueOf(x)));
            parts.add(BasicAutomata.makeStringUnion(s.toArray(String[]::new)));
        }
        for (Object p : patterns) {
            if (!(p instanceof String pattern)) {
                throw new UnsupportedSchemaException("pattern", "pattern inside not at " + at + " must be a string");
            }
            parts.add(EcmaRegex.search(pattern, limits.maxLexemeStates()));
        }
        Automaton union = parts.size() == 1 ? parts.getFirst() : Automaton.union(parts);
        return parts.size() == 1 ? union : CharNfa.determinize(union, limits.maxLexemeStates(),
                "the strings not allowed at " + at, "not");
    }

    /**
     * Which (enum) values {@code m}'s internal keywords rule out: a string it lists or in which one of its patterns
     * finds a match (a string with characters outside the Basic Multilingual Plane, which the automata do not
     * read, is ruled out too), an object with a member it keeps absent. Checked on the values themselves: no
     * automaton of the complement is needed to filter a list.
     */
    static java.util.function.Predicate<Object> excluded(Map<?, ?> m, String at, ConstraintLimits limits) {
        List<?> strings = list(m.get(NOT_STRINGS), at);
        List<Automaton> patterns = new ArrayList<>();
        for (Object p : list(m.get(NOT_PATTERNS), at)) {
            patterns.add(EcmaRegex.search(String.valueOf(p), limits.maxLexemeStates()));
        }
        Set<String> absent = absent(m, at);
        return v -> {
            if (v instanceof String s) {
                if (strings.contains(s)) {
                    return true;
                }
                if (!patterns.isEmpty() && s.chars().anyMatch(c -> Character.isSurrogate((char) c))) {
                    return true;
                }
                return patterns.stream().anyMatch(a -> a.run(s));
            }
            return v instanceof Map<?, ?> o && absent.stream().anyMatch(o::containsKey);
        };
    }

    /** The member names {@link #ABSENT} in {@code m} rules out. */
    static Set<String> absent(Map<?, ?> m, String at) {
        Set<String> out = new LinkedHashSet<>();
        list(m.get(ABSENT), at).forEach(x -> out.add(String.valueOf(x)));
        return out;
    }

    private static List<?> list(Object v, String at) {
        if (v == null) {
            return List.of();
        }
        if (!(v instanceof List<?> l)) {
            throw new UnsupportedSchemaException("not", "an internal keyword of not at " + at + " is not a list");
        }
        return l;
    }

    /** Adds {@code m} AND {@code d} unless they contradict. */
    private void add(List<Map<String, Object>> out, Map<String, Object> m, Object d) {
        if (d instanceof List<?> types && types.isEmpty()) {
            return;
        }
        if (d instanceof Map<?, ?> dm && dm.get("type") instanceof List<?> t && t.isEmpty()) {
            return; // no type left
        }
        Map<String, Object> c = conj(m, d);
        if (c != null && !(c.get(ABSENT) instanceof List<?> absent && c.get("required") instanceof List<?> req
                && absent.stream().anyMatch(req::contains))) {
            out.add(c);
        }
    }

    /** {@code m} AND {@code d}: merged when {@code d} is plain keywords, else as an allOf merged when compiled. */
    private Map<String, Object> conj(Map<String, Object> m, Object d) {
        if (Boolean.TRUE.equals(d)) {
            return m;
        }
        if (Boolean.FALSE.equals(d)) {
            return null;
        }
        if (d instanceof Map<?, ?> dm && !dm.containsKey("$ref") && !dm.containsKey("allOf")) {
            Map<String, Object> plain = SchemaKeywords.normalize(dm, at);
            if (!plain.containsKey("not") || !m.containsKey("not")) {
                return SchemaKeywords.merge(m, plain, at);
            }
        }
        return SchemaKeywords.both(m, d);
    }
}
