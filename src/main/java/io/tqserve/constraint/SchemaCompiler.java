package io.tqserve.constraint;

import dk.brics.automaton.Automaton;
import java.math.BigDecimal;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Compiles a JSON Schema (as plain Java values: maps, lists, strings, numbers, booleans, null) into an automaton
 * over bytes whose every accepted string is a JSON document valid against the schema. Without recursive
 * references the schema's nesting is bounded, so its language (for the supported keywords) is regular; free-form
 * parts ({@code {}}, an object without {@code properties}) nest at most {@link #FREE_DEPTH} deep. A keyword this
 * compiler cannot turn into an exact guarantee throws {@link UnsupportedSchemaException} naming it: the output is
 * never silently looser than the schema. Members are written in the schema's order; optional members may be left
 * out; members the schema does not declare are never written (valid whatever additionalProperties says).
 */
public final class SchemaCompiler {
    /**
     * Nesting depth of free-form JSON values (a schema part without a type, an object without properties). Each
     * level of free JSON costs seconds of dk.brics determinization and minimization on first use (the automaton
     * of JSON with a string, number and member alphabet of byte ranges grows about 2.2x per level), so free parts
     * stay shallow: scalars or flat arrays and objects of scalars.
     */
    public static final int FREE_DEPTH = 1;
    /** Largest automaton a schema may compile to. */
    public static final int MAX_STATES = 200_000;
    private static final Set<String> ANNOTATIONS = Set.of("title", "description", "$schema", "$id", "$comment",
            "default", "examples", "deprecated", "readOnly", "writeOnly", "$defs", "definitions", "strict");
    private static final Set<String> KNOWN = Set.of("type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref",
            "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "uniqueItems",
            "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "format",
            "nullable");

    private final Map<?, ?> root;
    private final Deque<String> refs = new ArrayDeque<>();

    private SchemaCompiler(Map<?, ?> root) {
        this.root = root;
    }

    /** The automaton of the documents valid against {@code schema}. */
    public static Automaton compile(Object schema) {
        if (!(schema instanceof Map<?, ?> m)) {
            throw new UnsupportedSchemaException("schema", "the schema must be a JSON object");
        }
        Automaton a = new SchemaCompiler(m).value(m, "#");
        if (a.isEmpty()) {
            throw new UnsupportedSchemaException("schema", "no JSON document satisfies the schema");
        }
        if (a.getNumberOfStates() > MAX_STATES) {
            throw new UnsupportedSchemaException("schema", "the schema is too large to enforce ("
                    + a.getNumberOfStates() + " automaton states, at most " + MAX_STATES + ")");
        }
        return a;
    }

    private Automaton value(Object schema, String at) {
        if (Boolean.TRUE.equals(schema)) {
            return JsonAutomata.anyValue(FREE_DEPTH);
        }
        if (!(schema instanceof Map<?, ?> m)) {
            throw new UnsupportedSchemaException("schema", "the schema at " + at + " must be an object or true");
        }
        for (Object k : m.keySet()) {
            String key = String.valueOf(k);
            if (!KNOWN.contains(key) && !ANNOTATIONS.contains(key)) {
                throw unsupported(key, at);
            }
        }
        List<Automaton> all = new ArrayList<>();
        if (m.containsKey("$ref")) {
            all.add(ref(String.valueOf(m.get("$ref")), at));
        }
        if (m.containsKey("enum")) {
            if (!(m.get("enum") instanceof List<?> values) || values.isEmpty()) {
                throw new UnsupportedSchemaException("enum", "enum at " + at + " must be a non-empty array");
            }
            List<Automaton> options = new ArrayList<>();
            for (Object v : values) {
                options.add(JsonAutomata.literal(Literals.json(v)));
            }
            all.add(Automaton.union(options));
        }
        if (m.containsKey("const")) {
            all.add(JsonAutomata.literal(Literals.json(m.get("const"))));
        }
        if (m.containsKey("anyOf")) {
            all.add(Automaton.union(branches(m.get("anyOf"), "anyOf", at)));
        }
        if (m.containsKey("oneOf")) {
            List<Automaton> b = branches(m.get("oneOf"), "oneOf", at);
            for (int i = 0; i < b.size(); i++) {
                for (int j = i + 1; j < b.size(); j++) {
                    if (!b.get(i).intersection(b.get(j)).isEmpty()) {
                        throw new UnsupportedSchemaException("oneOf", "oneOf at " + at + " has branches " + i + " and "
                                + j + " that a document can match both (only disjoint oneOf branches are supported)");
                    }
                }
            }
            all.add(Automaton.union(b));
        }
        if (m.containsKey("allOf")) {
            all.addAll(branches(m.get("allOf"), "allOf", at));
        }
        Automaton typed = typed(m, at);
        if (typed != null) {
            all.add(typed);
        }
        if (all.isEmpty()) {
            return JsonAutomata.anyValue(FREE_DEPTH);
        }
        Automaton a = all.getFirst();
        for (int i = 1; i < all.size(); i++) {
            a = a.intersection(all.get(i));
        }
        a.minimize();
        return a;
    }

    private List<Automaton> branches(Object list, String keyword, String at) {
        if (!(list instanceof List<?> l) || l.isEmpty()) {
            throw new UnsupportedSchemaException(keyword, keyword + " at " + at + " must be a non-empty array");
        }
        List<Automaton> out = new ArrayList<>();
        for (int i = 0; i < l.size(); i++) {
            out.add(value(l.get(i), at + "/" + keyword + "/" + i));
        }
        return out;
    }

    private Automaton ref(String ref, String at) {
        if (!ref.equals("#") && !ref.startsWith("#/")) {
            throw new UnsupportedSchemaException("$ref", "$ref '" + ref + "' at " + at
                    + " is not a local reference (#/$defs/... or #/definitions/...)");
        }
        if (refs.contains(ref)) {
            throw new UnsupportedSchemaException("$ref", "$ref '" + ref + "' is recursive; recursive schemas are "
                    + "not supported");
        }
        Object target = root;
        for (String part : ref.length() < 2 ? new String[0] : ref.substring(2).split("/")) {
            String key = part.replace("~1", "/").replace("~0", "~");
            target = target instanceof Map<?, ?> m ? m.get(key) : null;
        }
        if (target == null) {
            throw new UnsupportedSchemaException("$ref", "$ref '" + ref + "' at " + at + " points to nothing");
        }
        refs.push(ref);
        try {
            return value(target, ref);
        } finally {
            refs.pop();
        }
    }

    /** The automaton of {@code type} and its keywords, or null if the schema names no type. */
    private Automaton typed(Map<?, ?> m, String at) {
        Object type = m.get("type");
        List<String> types = new ArrayList<>();
        if (type instanceof String s) {
            types.add(s);
        } else if (type instanceof List<?> l) {
            l.forEach(t -> types.add(String.valueOf(t)));
        } else if (type == null) {
            if (m.containsKey("properties") || m.containsKey("required") || m.containsKey("additionalProperties")) {
                types.add("object");
            } else if (m.containsKey("items") || m.containsKey("minItems") || m.containsKey("maxItems")) {
                types.add("array");
            } else if (m.containsKey("minLength") || m.containsKey("maxLength")) {
                types.add("string");
            } else if (m.containsKey("minimum") || m.containsKey("maximum")) {
                types.add("number");
            } else {
                return null;
            }
        } else {
            throw new UnsupportedSchemaException("type", "type at " + at + " must be a string or an array");
        }
        if (Boolean.TRUE.equals(m.get("nullable"))) {
            types.add("null");
        }
        List<Automaton> options = new ArrayList<>();
        for (String t : types) {
            options.add(switch (t) {
                case "string" -> Scalars.string(m, at);
                case "integer" -> Scalars.integer(m, at);
                case "number" -> Scalars.number(m, at);
                case "boolean" -> JsonAutomata.bool();
                case "null" -> JsonAutomata.nul();
                case "object" -> object(m, at);
                case "array" -> array(m, at);
                default -> throw new UnsupportedSchemaException("type", "unknown type '" + t + "' at " + at);
            });
        }
        return Automaton.union(options);
    }

    private Automaton object(Map<?, ?> m, String at) {
        Object props = m.get("properties");
        List<String> required = new ArrayList<>();
        if (m.get("required") instanceof List<?> r) {
            r.forEach(x -> required.add(String.valueOf(x)));
        } else if (m.containsKey("required")) {
            throw new UnsupportedSchemaException("required", "required at " + at + " must be an array");
        }
        Object additional = m.get("additionalProperties");
        boolean closed = Boolean.FALSE.equals(additional);
        if (props == null && required.isEmpty()) {
            return closed ? JsonAutomata.literal("{}") : JsonAutomata.anyObject(FREE_DEPTH);
        }
        Map<?, ?> p = props instanceof Map<?, ?> pm ? pm : Map.of();
        if (props != null && !(props instanceof Map<?, ?>)) {
            throw new UnsupportedSchemaException("properties", "properties at " + at + " must be an object");
        }
        List<String> names = new ArrayList<>();
        List<Automaton> values = new ArrayList<>();
        List<Boolean> req = new ArrayList<>();
        for (Map.Entry<?, ?> e : p.entrySet()) {
            String name = String.valueOf(e.getKey());
            names.add(name);
            values.add(value(e.getValue(), at + "/properties/" + name));
            req.add(required.contains(name));
        }
        for (String r : required) {
            if (!p.containsKey(r)) {
                if (closed) {
                    throw new UnsupportedSchemaException("required", "required property '" + r + "' at " + at
                            + " is not in properties and additionalProperties is false");
                }
                names.add(r);
                values.add(additional instanceof Map<?, ?> am ? value(am, at + "/additionalProperties")
                        : JsonAutomata.anyValue(FREE_DEPTH));
                req.add(true);
            }
        }
        return JsonAutomata.object(names, values, req);
    }

    private Automaton array(Map<?, ?> m, String at) {
        if (m.containsKey("uniqueItems") && !Boolean.FALSE.equals(m.get("uniqueItems"))) {
            throw unsupported("uniqueItems", at);
        }
        Object items = m.get("items");
        Automaton item = items == null ? JsonAutomata.anyValue(FREE_DEPTH) : value(items, at + "/items");
        int min = Scalars.count(m, "minItems", at, 0);
        int max = Scalars.count(m, "maxItems", at, -1);
        return JsonAutomata.array(item, min, max);
    }

    static UnsupportedSchemaException unsupported(String keyword, String at) {
        return new UnsupportedSchemaException(keyword, "the JSON schema keyword '" + keyword + "' (at " + at
                + ") is not supported by constrained decoding");
    }

    static BigDecimal decimal(Object v, String keyword, String at) {
        if (!(v instanceof Number n)) {
            throw new UnsupportedSchemaException(keyword, keyword + " at " + at + " must be a number");
        }
        return new BigDecimal(n.toString());
    }
}
