package io.tqserve.constraint;

import dk.brics.automaton.Automaton;
import dk.brics.automaton.RegExp;
import io.tqserve.constraint.Grammar.Alt;
import io.tqserve.constraint.Grammar.Lex;
import io.tqserve.constraint.Grammar.Lit;
import io.tqserve.constraint.Grammar.Node;
import io.tqserve.constraint.Grammar.Rep;
import io.tqserve.constraint.Grammar.Rule;
import io.tqserve.constraint.Grammar.Seq;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;

/**
 * Compiles a JSON Schema (as plain Java values: maps, lists, strings, numbers, booleans, null) into a
 * {@link Grammar} whose every text is a JSON document valid against the schema. {@code $ref}s become named rules,
 * so recursive schemas are context-free grammars, and counts ({@code maxLength}, {@code maxItems}) are counters.
 * A keyword this compiler cannot turn into an exact guarantee throws {@link UnsupportedSchemaException} naming it:
 * the output is never looser than the schema. Members are written in the schema's order; optional members may be
 * left out; members the schema does not declare are never written (valid whatever additionalProperties says).
 *
 * <p>JSON whitespace ({@code [ \t\n\r]}, at most {@link ConstraintLimits#maxWhitespace()} bytes in a run) is
 * allowed wherever JSON allows it inside objects and arrays, not around the document. Every compile checks its
 * {@link ConstraintLimits} (nodes, lexeme states, enum bytes, time) and {@link Thread#interrupted()}.
 */
public final class SchemaCompiler {
    private static final Set<String> ANNOTATIONS = Set.of("title", "description", "$schema", "$id", "$comment",
            "default", "examples", "deprecated", "readOnly", "writeOnly", "$defs", "definitions", "strict");
    private static final Set<String> KNOWN = Set.of("type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref",
            "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "uniqueItems",
            "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "format",
            "nullable", "pattern");
    /** Validation keywords (drafts 3 to 2020-12) that are not enforced: a schema using one is refused. */
    private static final Set<String> REFUSED = Set.of("multipleOf", "maxContains", "minContains", "dependentRequired",
            "not", "if", "dependentSchemas", "prefixItems", "contains", "patternProperties", "propertyNames",
            "unevaluatedItems", "unevaluatedProperties", "$dynamicRef", "$recursiveRef", "dependencies", "disallow",
            "extends", "divisibleBy", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "contentEncoding",
            "contentMediaType", "contentSchema");
    /** Keywords that may stand beside {@code enum}/{@code const} (the values are filtered by type). */
    private static final Set<String> BESIDE_ENUM = Set.of("type", "nullable", "enum", "const");

    private final Map<?, ?> root;
    private final ConstraintLimits limits;
    private final long deadline;
    private final Map<String, Rule> rules = new HashMap<>();
    private final Node ws;
    private Rule anyValue;
    private int nodes;
    private int checks;

    private SchemaCompiler(Map<?, ?> root, ConstraintLimits limits) {
        this.root = root;
        this.limits = limits;
        this.deadline = System.nanoTime() + limits.compileMillis() * 1_000_000L;
        this.ws = limits.maxWhitespace() == 0 ? Grammar.EMPTY : new Lex(JsonLexemes.WHITESPACE, 0,
                limits.maxWhitespace());
    }

    /** The grammar of the documents valid against {@code schema}, within the default limits. */
    public static Grammar compile(Object schema) {
        return compile(schema, ConstraintLimits.DEFAULT);
    }

    /** The grammar of the documents valid against {@code schema}, within {@code limits}. */
    public static Grammar compile(Object schema, ConstraintLimits limits) {
        if (Boolean.TRUE.equals(schema)) {
            schema = Map.of();
        }
        if (!(schema instanceof Map<?, ?> m)) {
            throw new UnsupportedSchemaException("schema", "the schema must be a JSON object");
        }
        SchemaCompiler c = new SchemaCompiler(m, limits);
        Node n = c.value(m, "#");
        Grammar g = Grammar.of(n);
        if (g.root.minLen >= Grammar.INF) {
            throw new UnsupportedSchemaException("schema", "no JSON document satisfies the schema");
        }
        return g;
    }

    /** Any JSON object (json_object mode), values nested to any depth. */
    public static Grammar anyObject(ConstraintLimits limits) {
        SchemaCompiler c = new SchemaCompiler(Map.of(), limits);
        return Grammar.of(c.object(Map.of("type", "object"), "#"));
    }

    /** {@code s} as a JSON string literal (the escapes the string lexeme allows). */
    public static String quote(String s) {
        return JsonLexemes.quote(s);
    }

    private <N extends Node> N count(N n, String at) {
        if (++nodes > limits.maxNodes()) {
            throw new ConstraintBudgetException(keywordAt(at), "the schema compiles to more than "
                    + limits.maxNodes() + " grammar nodes");
        }
        return n;
    }

    private static String keywordAt(String at) {
        int i = at.lastIndexOf('/');
        String k = i < 0 ? "schema" : at.substring(i + 1);
        return KNOWN.contains(k) ? k : at.contains("/") ? at.substring(at.lastIndexOf('/', i - 1) + 1, i) : k;
    }

    private void check(String at) {
        if ((++checks & 63) == 0) {
            if (Thread.interrupted()) {
                Thread.currentThread().interrupt();
                throw new CancellationException("constraint compile cancelled");
            }
            if (System.nanoTime() > deadline) {
                throw new ConstraintBudgetException(keywordAt(at), "the compile took longer than "
                        + limits.compileMillis() + " ms");
            }
        }
    }

    private Node lit(String s, String at) {
        return count(Grammar.lit(s), at);
    }

    private Node seq(String at, Node... parts) {
        return count(Grammar.seq(parts), at);
    }

    private Node alt(String at, Node... options) {
        return count(Grammar.alt(options), at);
    }

    Node value(Object schema, String at) {
        check(at);
        if (Boolean.TRUE.equals(schema)) {
            return anyValue();
        }
        if (!(schema instanceof Map<?, ?> raw)) {
            throw new UnsupportedSchemaException("schema", "the schema at " + at + " must be an object or true");
        }
        Map<String, Object> m = normalize(raw, at);
        List<String> constraining = new ArrayList<>(m.keySet());
        if (m.containsKey("$ref")) {
            for (String k : constraining) {
                if (!k.equals("$ref")) {
                    throw new UnsupportedSchemaException(k, "'" + k + "' beside '$ref' (at " + at + ") is not "
                            + "supported by constrained decoding");
                }
            }
            return ref(String.valueOf(m.get("$ref")), at);
        }
        if (m.containsKey("enum") || m.containsKey("const")) {
            for (String k : constraining) {
                if (!BESIDE_ENUM.contains(k)) {
                    throw new UnsupportedSchemaException(k, "'" + k + "' beside enum/const (at " + at + ") is not "
                            + "supported by constrained decoding");
                }
            }
            return enumeration(m, at);
        }
        String combinator = null;
        for (String k : List.of("anyOf", "oneOf", "allOf")) {
            if (m.containsKey(k)) {
                if (combinator != null) {
                    throw new UnsupportedSchemaException(k, "'" + k + "' beside '" + combinator + "' (at " + at
                            + ") is not supported by constrained decoding");
                }
                combinator = k;
            }
        }
        if (combinator != null) {
            for (String k : constraining) {
                if (!k.equals(combinator)) {
                    throw new UnsupportedSchemaException(k, "'" + k + "' beside '" + combinator + "' (at " + at
                            + ") is not supported by constrained decoding");
                }
            }
            List<Node> b = branches(m.get(combinator), combinator, at);
            if (combinator.equals("allOf")) {
                if (b.size() != 1) {
                    throw new UnsupportedSchemaException("allOf", "allOf with " + b.size() + " branches (at " + at
                            + ") is not supported by constrained decoding (one branch is)");
                }
                return b.getFirst();
            }
            if (combinator.equals("oneOf")) {
                disjoint(b, (List<?>) m.get("oneOf"), at);
            }
            return alt(at, b.toArray(Node[]::new));
        }
        Node typed = typed(m, at);
        return typed == null ? anyValue() : typed;
    }

    /**
     * The keywords of a schema object that constrain the instance, in draft 2020-12 spelling. Keywords of no
     * validation vocabulary (annotations, extensions such as {@code x-...}, misspellings) are dropped: JSON Schema
     * ignores unknown keywords. Validation keywords this compiler cannot enforce exactly are refused. Draft 4's
     * boolean {@code exclusiveMinimum}/{@code exclusiveMaximum} become the numeric form; {@code minProperties},
     * {@code maxProperties} and {@code additionalItems} are dropped where they cannot fail (else refused).
     */
    private Map<String, Object> normalize(Map<?, ?> raw, String at) {
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
        Set<String> required = new HashSet<>();
        if (raw.get("required") instanceof List<?> r) {
            r.forEach(x -> required.add(String.valueOf(x)));
        }
        if (raw.containsKey("minProperties")) {
            if (!(raw.get("minProperties") instanceof Number n) || n.longValue() > required.size()) {
                throw new UnsupportedSchemaException("minProperties", "minProperties (at " + at + ") beyond the "
                        + "required properties is not supported by constrained decoding");
            }
        }
        if (raw.containsKey("maxProperties")) {
            Set<String> all = new HashSet<>(required);
            if (raw.get("properties") instanceof Map<?, ?> props) {
                props.keySet().forEach(k -> all.add(String.valueOf(k)));
            }
            if (!(raw.get("maxProperties") instanceof Number n) || !Boolean.FALSE.equals(raw.get(
                    "additionalProperties")) || n.longValue() < all.size()) {
                throw new UnsupportedSchemaException("maxProperties", "maxProperties (at " + at + ") that can fail "
                        + "is not supported by constrained decoding");
            }
        }
        if (raw.containsKey("additionalItems") && raw.get("items") instanceof List<?>) {
            throw unsupported("additionalItems", at);
        }
        return m;
    }

    private static boolean hasRef(Object schema) {
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

    private List<Node> branches(Object list, String keyword, String at) {
        if (!(list instanceof List<?> l) || l.isEmpty()) {
            throw new UnsupportedSchemaException(keyword, keyword + " at " + at + " must be a non-empty array");
        }
        List<Node> out = new ArrayList<>();
        for (int i = 0; i < l.size(); i++) {
            out.add(value(l.get(i), at + "/" + keyword + "/" + i));
        }
        return out;
    }

    /**
     * oneOf is an exact union only when no document matches two branches: accepted when the branches start with
     * disjoint bytes (different JSON types) or are disjoint sets of literal values.
     */
    private void disjoint(List<Node> b, List<?> schemas, String at) {
        List<long[]> firsts = new ArrayList<>();
        for (Node n : b) {
            firsts.add(first(n, new HashSet<>()));
        }
        for (int i = 0; i < b.size(); i++) {
            for (int j = i + 1; j < b.size(); j++) {
                long[] x = firsts.get(i);
                long[] y = firsts.get(j);
                boolean overlap = x == null || y == null || (x[0] & y[0]) != 0 || (x[1] & y[1]) != 0
                        || (x[2] & y[2]) != 0 || (x[3] & y[3]) != 0;
                if (overlap && !disjointLiterals(schemas.get(i), schemas.get(j))) {
                    throw new UnsupportedSchemaException("oneOf", "oneOf at " + at + " has branches " + i + " and "
                            + j + " that a document may match both (only branches of different types or of "
                            + "different constant values are supported)");
                }
            }
        }
    }

    private static boolean disjointLiterals(Object a, Object b) {
        Set<String> x = literalValues(a);
        Set<String> y = literalValues(b);
        if (x == null || y == null) {
            return false;
        }
        for (String s : x) {
            if (y.contains(s)) {
                return false;
            }
        }
        return true;
    }

    private static Set<String> literalValues(Object schema) {
        if (!(schema instanceof Map<?, ?> m)) {
            return null;
        }
        Set<String> out = new HashSet<>();
        if (m.containsKey("const")) {
            out.add(Literals.json(m.get("const")));
        } else if (m.get("enum") instanceof List<?> l) {
            l.forEach(v -> out.add(Literals.json(v)));
        } else {
            return null;
        }
        return out;
    }

    /** The bytes a (non-empty) value's text may start with, or null if unknown. */
    private static long[] first(Node n, Set<Node> seen) {
        if (!seen.add(n)) {
            return null;
        }
        return switch (n) {
            case Lit l -> {
                long[] f = new long[4];
                int b = l.bytes[0] & 0xFF;
                f[b >>> 6] |= 1L << b;
                yield f;
            }
            case Lex l -> l.lexeme.firstBytes(l.lexeme.start()).clone();
            case Seq s -> s.parts.length == 0 ? null : first(s.parts[0], seen);
            case Alt a -> {
                long[] f = new long[4];
                for (Node o : a.options) {
                    long[] g = first(o, seen);
                    if (g == null) {
                        yield null;
                    }
                    for (int i = 0; i < 4; i++) {
                        f[i] |= g[i];
                    }
                }
                yield f;
            }
            case Rule r -> r.body == null ? null : first(r.body, seen);
            case Rep r -> r.min == 0 ? null : first(r.item, seen);
        };
    }

    private Node ref(String ref, String at) {
        if (!ref.equals("#") && !ref.startsWith("#/")) {
            throw new UnsupportedSchemaException("$ref", "$ref '" + ref + "' at " + at
                    + " is not a local reference (#/$defs/... or #/definitions/...)");
        }
        Rule r = rules.get(ref);
        if (r != null) {
            return r; // possibly still being built: a recursive reference
        }
        Object target = root;
        for (String part : ref.length() < 2 ? new String[0] : ref.substring(2).split("/")) {
            String key = part.replace("~1", "/").replace("~0", "~");
            target = target instanceof Map<?, ?> m ? m.get(key) : target instanceof List<?> l
                    && key.matches("\\d{1,9}") && Integer.parseInt(key) < l.size() ? l.get(Integer.parseInt(key))
                    : null;
        }
        if (target == null) {
            throw new UnsupportedSchemaException("$ref", "$ref '" + ref + "' at " + at + " points to nothing");
        }
        r = count(new Rule(ref), at);
        rules.put(ref, r);
        r.body = value(target, ref);
        return r;
    }

    private Node enumeration(Map<?, ?> m, String at) {
        List<Object> values = new ArrayList<>();
        String keyword = m.containsKey("const") ? "const" : "enum";
        if (m.containsKey("const")) {
            values.add(m.get("const"));
        }
        if (m.containsKey("enum")) {
            if (!(m.get("enum") instanceof List<?> l) || l.isEmpty()) {
                throw new UnsupportedSchemaException("enum", "enum at " + at + " must be a non-empty array");
            }
            if (m.containsKey("const")) {
                values.removeIf(v -> !l.contains(v));
            } else {
                values.addAll(l);
            }
        }
        Set<String> types = types(m, at);
        List<byte[]> texts = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        long total = 0;
        for (Object v : values) {
            if (types != null && !types.contains(typeOf(v)) && !(types.contains("number") && typeOf(v).equals(
                    "integer"))) {
                continue;
            }
            String s = Literals.json(v);
            if (seen.add(s)) {
                byte[] b = s.getBytes(StandardCharsets.UTF_8);
                total += b.length;
                if (total > limits.maxEnumBytes()) {
                    throw new ConstraintBudgetException(keyword, "the values of " + keyword + " at " + at
                            + " exceed " + limits.maxEnumBytes() + " bytes");
                }
                texts.add(b);
            }
        }
        if (texts.isEmpty()) {
            return Grammar.fail();
        }
        if (texts.size() == 1) {
            return count(Grammar.lit(texts.getFirst()), at);
        }
        nodes += texts.size() / 64;
        return count(new Lex(new Lexeme.Strings(keyword, texts), 0, -1), at);
    }

    private static String typeOf(Object v) {
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
    private static Set<String> types(Map<?, ?> m, String at) {
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

    /** The node of {@code type} and its keywords, or null if the schema names no type. */
    private Node typed(Map<?, ?> m, String at) {
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
            } else if (m.containsKey("minLength") || m.containsKey("maxLength") || m.containsKey("pattern")
                    || m.containsKey("format")) {
                types.add("string");
            } else if (m.containsKey("minimum") || m.containsKey("maximum")) {
                types.add("number");
            } else {
                return null;
            }
        } else {
            throw new UnsupportedSchemaException("type", "type at " + at + " must be a string or an array");
        }
        if (Boolean.TRUE.equals(m.get("nullable")) && !types.contains("null")) {
            types.add("null");
        }
        List<Node> options = new ArrayList<>();
        for (String t : types) {
            options.add(switch (t) {
                case "string" -> string(m, at);
                case "integer" -> integer(m, at);
                case "number" -> number(m, at);
                case "boolean" -> alt(at, lit("true", at), lit("false", at));
                case "null" -> lit("null", at);
                case "object" -> object(m, at);
                case "array" -> array(m, at);
                default -> throw new UnsupportedSchemaException("type", "unknown type '" + t + "' at " + at);
            });
        }
        return alt(at, options.toArray(Node[]::new));
    }

    private Node string(Map<?, ?> m, String at) {
        int min = Scalars.count(m, "minLength", at, 0);
        int max = Scalars.count(m, "maxLength", at, -1);
        if (max >= 0 && max < min) {
            throw new UnsupportedSchemaException("maxLength", "maxLength < minLength at " + at);
        }
        Object format = m.get("format");
        Object pattern = m.get("pattern");
        Node quote = lit("\"", at);
        if (format != null || pattern != null) {
            return patterned(format, pattern, min, max, at);
        }
        if (max == 0) {
            return lit("\"\"", at);
        }
        return seq(at, quote, count(new Lex(JsonLexemes.STRING_CHAR, min, max), at), quote);
    }

    /**
     * A string with a {@code format} and/or a {@code pattern}: the intersection of their character automata and
     * the length bounds, as one lexeme over the bytes of the string's contents.
     */
    private Node patterned(Object format, Object pattern, int min, int max, String at) {
        Automaton chars = null; // DFAs only below: products of DFAs stay deterministic (no subset construction)
        String keyword = "pattern";
        String name = "";
        if (format != null) {
            chars = Formats.chars(String.valueOf(format));
            if (chars == null) {
                throw new UnsupportedSchemaException("format", "string format '" + format + "' (at " + at
                        + ") is not supported by constrained decoding (supported: "
                        + String.join(", ", new java.util.TreeSet<>(Formats.SUPPORTED)) + ")");
            }
            keyword = "format";
            name = "format " + format;
        }
        if (pattern != null) {
            if (!(pattern instanceof String p)) {
                throw new UnsupportedSchemaException("pattern", "pattern at " + at + " must be a string");
            }
            Automaton search = EcmaRegex.search(p, limits.maxLexemeStates());
            chars = chars == null ? search : chars.intersection(search);
            keyword = "pattern";
            name = (name.isEmpty() ? "" : name + ", ") + "pattern /" + p + "/";
        }
        check(at);
        if (min > 0 || max >= 0) {
            int longest = chars.isFinite() ? longest(chars) : Integer.MAX_VALUE;
            boolean fits = max < 0 || longest <= max;
            boolean longEnough = min == 0 || chars.getShortestExample(true) != null
                    && chars.getShortestExample(true).length() >= min;
            if (!fits || !longEnough) {
                if (Math.max(min, max) > EcmaRegex.MAX_REPEAT) {
                    throw new ConstraintBudgetException(max > EcmaRegex.MAX_REPEAT ? "maxLength" : "minLength",
                            "length bounds above " + EcmaRegex.MAX_REPEAT + " beside a pattern or format (at " + at
                            + ") are beyond the compile budget");
                }
                chars = chars.intersection(EcmaRegex.lengths(min, max));
            }
        }
        chars.minimize();
        if (chars.isEmpty()) {
            return Grammar.fail();
        }
        Automaton bytes = JsonStringContent.of(chars);
        return seq(at, lit("\"", at), count(new Lex(JsonLexemes.of(name, bytes, limits.maxLexemeStates(), keyword),
                0, -1), at), lit("\"", at));
    }

    /** Length of the longest string of a finite automaton. */
    private static int longest(Automaton a) {
        Set<String> all = a.getFiniteStrings(10_000);
        if (all == null) {
            return Integer.MAX_VALUE;
        }
        int best = 0;
        for (String s : all) {
            best = Math.max(best, s.length());
        }
        return best;
    }

    private static final Automaton INTEGER = new RegExp("-?(0|[1-9][0-9]{0,18})").toAutomaton();
    private static final Automaton NUMBER = new RegExp(
            "-?(0|[1-9][0-9]{0,18})(\\.[0-9]{1,20})?([eE][+\\-]?[0-9]{1,3})?").toAutomaton();
    private static final Lexeme INTEGER_LEXEME = JsonLexemes.of("integer", INTEGER, 1000, "type");
    private static final Lexeme NUMBER_LEXEME = JsonLexemes.of("number", NUMBER, 1000, "type");

    private Node integer(Map<?, ?> m, String at) {
        if (!m.containsKey("minimum") && !m.containsKey("maximum") && !m.containsKey("exclusiveMinimum")
                && !m.containsKey("exclusiveMaximum") && !"int32".equals(m.get("format"))) {
            if (m.get("format") != null && !"int64".equals(m.get("format"))) {
                throw new UnsupportedSchemaException("format", "integer format '" + m.get("format") + "' (at " + at
                        + ") is not supported (supported: int32, int64)");
            }
            return count(new Lex(INTEGER_LEXEME, 0, -1), at);
        }
        return count(new Lex(JsonLexemes.of("integer range", Scalars.integer(m, at), limits.maxLexemeStates(),
                "minimum"), 0, -1), at);
    }

    private Node number(Map<?, ?> m, String at) {
        Automaton a = Scalars.number(m, at);
        if (a == null) {
            return count(new Lex(NUMBER_LEXEME, 0, -1), at);
        }
        return count(new Lex(JsonLexemes.of("number range", a, limits.maxLexemeStates(), "minimum"), 0, -1), at);
    }

    /** Any JSON value (free-form parts of a schema): a recursive rule, built once per compile. */
    private Node anyValue() {
        if (anyValue != null) {
            return anyValue;
        }
        String at = "#";
        anyValue = count(new Rule("any JSON value"), at);
        Node string = seq(at, lit("\"", at), count(new Lex(JsonLexemes.STRING_CHAR, 0, -1), at), lit("\"", at));
        Node member = seq(at, string, ws, lit(":", at), ws, anyValue, ws);
        Node object = seq(at, lit("{", at), ws, alt(at, lit("}", at), seq(at, count(new Rep(member,
                seq(at, lit(",", at), ws), 1, -1), at), lit("}", at))));
        Node item = seq(at, anyValue, ws);
        Node array = seq(at, lit("[", at), ws, alt(at, lit("]", at), seq(at, count(new Rep(item,
                seq(at, lit(",", at), ws), 1, -1), at), lit("]", at))));
        anyValue.body = alt(at, object, array, string, count(new Lex(NUMBER_LEXEME, 0, -1), at),
                lit("true", at), lit("false", at), lit("null", at));
        return anyValue;
    }

    private Node object(Map<?, ?> m, String at) {
        Object props = m.get("properties");
        List<String> required = new ArrayList<>();
        if (m.get("required") instanceof List<?> r) {
            r.forEach(x -> required.add(String.valueOf(x)));
        } else if (m.containsKey("required")) {
            throw new UnsupportedSchemaException("required", "required at " + at + " must be an array");
        }
        Object additional = m.get("additionalProperties");
        boolean closed = Boolean.FALSE.equals(additional);
        Node open = lit("{", at);
        Node close = lit("}", at);
        if (props == null && required.isEmpty()) {
            if (closed) {
                return seq(at, open, ws, close);
            }
            Node value = additional instanceof Map<?, ?> am ? value(am, at + "/additionalProperties") : anyValue();
            Node string = seq(at, lit("\"", at), count(new Lex(JsonLexemes.STRING_CHAR, 0, -1), at), lit("\"", at));
            Node member = seq(at, string, ws, lit(":", at), ws, value, ws);
            return seq(at, open, ws, alt(at, close, seq(at, count(new Rep(member, seq(at, lit(",", at), ws), 1, -1),
                    at), close)));
        }
        if (props != null && !(props instanceof Map<?, ?>)) {
            throw new UnsupportedSchemaException("properties", "properties at " + at + " must be an object");
        }
        Map<?, ?> p = props instanceof Map<?, ?> pm ? pm : Map.of();
        List<Node> members = new ArrayList<>();
        List<Boolean> req = new ArrayList<>();
        for (Map.Entry<?, ?> e : p.entrySet()) {
            String name = String.valueOf(e.getKey());
            Node value = value(e.getValue(), at + "/properties/" + name);
            members.add(seq(at, lit(quote(name), at), ws, lit(":", at), ws, value, ws));
            req.add(required.contains(name));
        }
        for (String r : required) {
            if (!p.containsKey(r)) {
                if (closed) {
                    throw new UnsupportedSchemaException("required", "required property '" + r + "' at " + at
                            + " is not in properties and additionalProperties is false");
                }
                Node value = additional instanceof Map<?, ?> am ? value(am, at + "/additionalProperties")
                        : anyValue();
                members.add(seq(at, lit(quote(r), at), ws, lit(":", at), ws, value, ws));
                req.add(true);
            }
        }
        // built from the back, linear in the members: K[i] = one member from i on (skipping optional ones), then
        // R[next]; R[i] = nothing more (if members i.. are all optional) or ", " K[i]
        int n = members.size();
        Node[] k = new Node[n + 1];
        Node[] r = new Node[n + 1];
        k[n] = Grammar.fail();
        r[n] = Grammar.EMPTY;
        boolean allOptional = true;
        for (int i = n - 1; i >= 0; i--) {
            Node one = seq(at, members.get(i), r[i + 1]);
            k[i] = req.get(i) ? one : alt(at, one, k[i + 1]);
            allOptional &= !req.get(i);
            Node more = seq(at, lit(",", at), ws, k[i]);
            r[i] = allOptional ? alt(at, Grammar.EMPTY, more) : more;
        }
        Node body = seq(at, k[0], close);
        return seq(at, open, ws, allOptional ? alt(at, close, body) : body);
    }

    private Node array(Map<?, ?> m, String at) {
        if (m.containsKey("uniqueItems") && !Boolean.FALSE.equals(m.get("uniqueItems"))) {
            throw unsupported("uniqueItems", at);
        }
        Object items = m.get("items");
        Node item = items == null ? anyValue() : value(items, at + "/items");
        int min = Scalars.count(m, "minItems", at, 0);
        int max = Scalars.count(m, "maxItems", at, -1);
        if (max >= 0 && max < min) {
            throw new UnsupportedSchemaException("maxItems", "maxItems < minItems at " + at);
        }
        Node open = lit("[", at);
        Node close = lit("]", at);
        if (max == 0) {
            return seq(at, open, ws, close);
        }
        Node list = seq(at, count(new Rep(seq(at, item, ws), seq(at, lit(",", at), ws), Math.max(1, min), max), at),
                close);
        return seq(at, open, ws, min == 0 ? alt(at, close, list) : list);
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

    static String describe(Node n) {
        return n.getClass().getSimpleName() + Arrays.toString(Grammar.children(n));
    }
}
