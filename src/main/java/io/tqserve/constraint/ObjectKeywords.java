package io.tqserve.constraint;

import dk.brics.automaton.Automaton;
import dk.brics.automaton.BasicAutomata;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The values of the object keywords {@link ObjectSchemas} enforces that are not schemas of members: {@code
 * propertyNames} as an automaton over the characters of a name, and the dependencies as lists of property names.
 */
final class ObjectKeywords {
    /** Keywords a {@code propertyNames} schema may use (it constrains strings: the member names). */
    private static final Set<String> NAME_KEYWORDS = Set.of("type", "pattern", "minLength", "maxLength", "enum",
            "const");
    /** Most {@code $ref}s followed to reach a {@code propertyNames} schema. */
    private static final int MAX_REFS = 8;

    private ObjectKeywords() {
    }

    /**
     * The member names {@code propertyNames} allows, as characters, or null when it allows every name. Supported:
     * boolean schemas, {@code $ref}, {@code type}, {@code pattern}, {@code minLength}/{@code maxLength} and string
     * {@code enum}/{@code const}; any other keyword is refused naming propertyNames.
     */
    static Automaton propertyNames(SchemaCompiler c, Object schema, String at) {
        String where = at + "/propertyNames";
        for (int refs = 0; schema instanceof Map<?, ?> m && m.containsKey("$ref"); refs++) {
            if (refs == MAX_REFS || m.size() != 1) {
                throw new UnsupportedSchemaException("propertyNames", "propertyNames at " + at + " is a $ref beside "
                        + "other keywords or a chain of more than " + MAX_REFS + " $refs");
            }
            schema = c.resolve(String.valueOf(m.get("$ref")), where);
        }
        if (schema == null || Boolean.TRUE.equals(schema)) {
            return null;
        }
        if (Boolean.FALSE.equals(schema)) {
            return BasicAutomata.makeEmpty();
        }
        if (!(schema instanceof Map<?, ?> raw)) {
            throw new UnsupportedSchemaException("propertyNames", "propertyNames at " + at + " must be a schema");
        }
        Map<String, Object> m = SchemaKeywords.normalize(raw, where);
        for (String k : m.keySet()) {
            if (!NAME_KEYWORDS.contains(k)) {
                throw new UnsupportedSchemaException("propertyNames", "'" + k + "' in propertyNames (at " + at
                        + ") is not supported by constrained decoding (supported: " + String.join(", ",
                        new java.util.TreeSet<>(NAME_KEYWORDS)) + ", $ref)");
            }
        }
        Set<String> types = SchemaKeywords.types(m, where);
        if (types != null && !types.contains("string")) {
            return BasicAutomata.makeEmpty(); // names are strings
        }
        Automaton a = EcmaRegex.anyString();
        if (m.get("pattern") instanceof String p) {
            a = a.intersection(EcmaRegex.search(p, c.limits().maxLexemeStates()));
        } else if (m.containsKey("pattern")) {
            throw new UnsupportedSchemaException("pattern", "pattern at " + where + " must be a string");
        }
        int min = Scalars.count(m, "minLength", where, 0);
        int max = Scalars.count(m, "maxLength", where, -1);
        if (min > 0 || max >= 0) {
            if (Math.max(min, max) > EcmaRegex.MAX_REPEAT) {
                throw new ConstraintBudgetException("propertyNames", "length bounds above " + EcmaRegex.MAX_REPEAT
                        + " in propertyNames (at " + at + ") are beyond the compile budget");
            }
            a = a.intersection(EcmaRegex.lengths(min, max));
        }
        for (String k : List.of("enum", "const")) {
            if (m.containsKey(k)) {
                List<Automaton> names = new ArrayList<>();
                for (Object v : m.get(k) instanceof List<?> l && k.equals("enum") ? l : List.of(m.get(k))) {
                    if (v instanceof String s) {
                        names.add(BasicAutomata.makeString(s));
                    }
                }
                a = a.intersection(names.isEmpty() ? BasicAutomata.makeEmpty() : Automaton.union(names));
            }
        }
        a.minimize();
        return a;
    }

    /**
     * The dependencies of an object schema: for each property name, the names that must be present when it is.
     * From {@code dependentRequired}, and from {@code dependencies} whose values are arrays of names, a name
     * (draft 3), or schemas with {@code required} only (annotations aside); any other schema is refused naming
     * the keyword ({@code dependentSchemas} is refused as a keyword).
     */
    static Map<String, List<String>> dependencies(Map<?, ?> m, String at) {
        Map<String, List<String>> out = new LinkedHashMap<>();
        for (String k : List.of("dependentRequired", "dependencies")) {
            if (m.get(k) == null) {
                continue;
            }
            if (!(m.get(k) instanceof Map<?, ?> deps)) {
                throw new UnsupportedSchemaException(k, k + " at " + at + " must be an object");
            }
            for (Map.Entry<?, ?> e : deps.entrySet()) {
                String name = String.valueOf(e.getKey());
                Object v = e.getValue();
                if (v instanceof Map<?, ?> schema && k.equals("dependencies")) {
                    List<Object> names = new ArrayList<>();
                    if (!requiredOnly(schema, at + "/" + k + "/" + name, names)) {
                        throw new UnsupportedSchemaException(k, "the schema of '" + name + "' in dependencies (at "
                                + at + ") is not supported by constrained decoding (only required, and allOf of "
                                + "required, are)");
                    }
                    v = names;
                } else if (v instanceof String s && k.equals("dependencies")) {
                    v = List.of(s);
                }
                if (!(v instanceof List<?> l)) {
                    throw new UnsupportedSchemaException(k, "the value of '" + name + "' in " + k + " at " + at
                            + " must be an array of property names");
                }
                List<String> names = out.computeIfAbsent(name, x -> new ArrayList<>());
                l.forEach(x -> names.add(String.valueOf(x)));
            }
        }
        return out;
    }

    /** Whether {@code schema} only requires properties (through allOf too); adds their names to {@code names}. */
    private static boolean requiredOnly(Object schema, String at, List<Object> names) {
        if (Boolean.TRUE.equals(schema)) {
            return true;
        }
        if (!(schema instanceof Map<?, ?> raw)) {
            return false;
        }
        Map<String, Object> s = SchemaKeywords.normalize(raw, at);
        for (Map.Entry<String, Object> e : s.entrySet()) {
            if (e.getKey().equals("required") && e.getValue() instanceof List<?> l) {
                names.addAll(l);
            } else if (e.getKey().equals("allOf") && e.getValue() instanceof List<?> l) {
                for (int i = 0; i < l.size(); i++) {
                    if (!requiredOnly(l.get(i), at + "/allOf/" + i, names)) {
                        return false;
                    }
                }
            } else {
                return false;
            }
        }
        return true;
    }
}
