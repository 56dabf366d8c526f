package io.tqserve.constraint;

import io.tqserve.constraint.Grammar.Lex;
import io.tqserve.constraint.Grammar.Node;
import io.tqserve.constraint.Grammar.Rep;
import io.tqserve.constraint.Grammar.Rule;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CancellationException;

/**
 * Compiles a JSON Schema (as plain Java values: maps, lists, strings, numbers, booleans, null) into a
 * {@link Grammar} whose every text is a JSON document valid against the schema. {@code $ref}s become named rules,
 * so recursive schemas are context-free grammars, and counts ({@code maxLength}, {@code maxItems}) are counters.
 * A keyword this compiler cannot turn into an exact guarantee throws {@link UnsupportedSchemaException} naming it:
 * the output is never looser than the schema. An object's members come in any order ({@link AnyOrder}; with more
 * than {@link AnyOrder#MAX_MEMBERS} declared ones, in the schema's order), each declared one at most once,
 * optional ones may be left out; members the schema does not declare may come too, under additionalProperties
 * (absent or true: any value; false: none), named by {@link UndeclaredNames} (any name but a declared one).
 *
 * <p>JSON whitespace ({@code [ \t\n\r]}, at most {@link ConstraintLimits#maxWhitespace()} bytes in a run) is
 * allowed wherever JSON allows it inside objects and arrays, not around the document. Every compile checks its
 * {@link ConstraintLimits} (nodes, lexeme states, enum bytes, time, the bytes the compile allocated) and
 * {@link Thread#interrupted()}.
 */
public final class SchemaCompiler {
    /** Most levels of allOf/$ref merged into one schema. */
    private static final int MAX_FLATTEN = 32;

    private final Map<?, ?> root;
    private final ConstraintLimits limits;
    private final long deadline;
    /** Whether an object without additionalProperties takes undeclared members (JSON Schema's reading). */
    private final boolean openByDefault;
    private final Map<String, Rule> rules = new HashMap<>();
    /**
     * String, integer and number lexemes by their keywords ({@link ScalarSchemas#string}, {@link
     * ScalarSchemas#numeric}), shared with sub-compilers.
     */
    private final Map<String, Optional<Lexeme>> lexemes;
    private final Node ws;
    private Rule anyValue;
    private int nodes;
    private int checks;
    private int negations;

    private SchemaCompiler(Map<?, ?> root, ConstraintLimits limits, boolean openByDefault) {
        this(root, limits, clock() + limits.compileMillis() * 1_000_000L, openByDefault, new HashMap<>());
    }

    private SchemaCompiler(Map<?, ?> root, ConstraintLimits limits, long deadline, boolean openByDefault,
            Map<String, Optional<Lexeme>> lexemes) {
        this.root = root;
        this.lexemes = lexemes;
        this.limits = limits;
        this.deadline = deadline;
        this.openByDefault = openByDefault;
        this.ws = limits.maxWhitespace() == 0 ? Grammar.EMPTY : new Lex(JsonLexemes.WHITESPACE, 0,
                limits.maxWhitespace());
    }

    /** The grammar of the documents valid against {@code schema}, within the default limits. */
    public static Grammar compile(Object schema) {
        return compile(schema, ConstraintLimits.DEFAULT);
    }

    /** The grammar of the documents valid against {@code schema}, within {@code limits}. */
    public static Grammar compile(Object schema, ConstraintLimits limits) {
        return compile(schema, limits, true);
    }

    /**
     * The grammar a model generates against {@code schema}: the valid documents, except that an object whose
     * schema declares members and says nothing of {@code additionalProperties} writes only its declared members
     * ({@code additionalProperties: true} or a schema lets others through). Every document is still valid; a small
     * model left free to add members it invents (as JSON Schema's default allows) writes them until the completion
     * budget closes the object. XGrammar's strict mode and OpenAI's strict structured outputs read schemas alike.
     */
    public static Grammar compileForGeneration(Object schema, ConstraintLimits limits) {
        return compile(schema, limits, false);
    }

    private static Grammar compile(Object schema, ConstraintLimits limits, boolean openByDefault) {
        if (Boolean.TRUE.equals(schema)) {
            schema = Map.of();
        }
        if (!(schema instanceof Map<?, ?> m)) {
            throw new UnsupportedSchemaException("schema", "the schema must be a JSON object");
        }
        SchemaCompiler c = new SchemaCompiler(m, limits, openByDefault);
        Node n = c.value(m, "#");
        Grammar g = Grammar.of(n);
        if (g.root.minLen >= Grammar.INF) {
            throw new UnsupportedSchemaException("schema", "no JSON document satisfies the schema");
        }
        return g;
    }

    /** Any JSON object (json_object mode), values nested to any depth. */
    public static Grammar anyObject(ConstraintLimits limits) {
        SchemaCompiler c = new SchemaCompiler(Map.of(), limits, true);
        return Grammar.of(c.object(Map.of("type", "object"), "#"));
    }

    /** {@code s} as a JSON string literal (the escapes the string lexeme allows). */
    public static String quote(String s) {
        return JsonLexemes.quote(s);
    }

    <N extends Node> N count(N n, String at) {
        if (++nodes > limits.maxNodes()) {
            throw new ConstraintBudgetException(keywordAt(at), "the schema compiles to more than "
                    + limits.maxNodes() + " grammar nodes");
        }
        return n;
    }

    private static String keywordAt(String at) {
        int i = at.lastIndexOf('/');
        String k = i < 0 ? "schema" : at.substring(i + 1);
        return SchemaKeywords.KNOWN.contains(k) ? k : at.contains("/") ? at.substring(at.lastIndexOf('/', i - 1) + 1, i) : k;
    }

    /** {@link #check} with the clock read now (before and after steps that take long). */
    void checkNow(String at) {
        checks |= 63;
        check(at);
    }

    void check(String at) {
        if ((++checks & 63) == 0) {
            if (Thread.interrupted()) {
                Thread.currentThread().interrupt();
                throw new CancellationException("constraint compile cancelled");
            }
            if (clock() > deadline) {
                throw new ConstraintBudgetException(keywordAt(at), "the compile took longer than "
                        + limits.compileMillis() + " ms");
            }
            if (limits.allocation().allocatedBytes() > limits.compileBytes()) {
                throw new ConstraintBudgetException(keywordAt(at), "the compile allocated more than "
                        + (limits.compileBytes() >> 20) + " MB");
            }
        }
    }

    private static final java.lang.management.ThreadMXBean THREADS =
            java.lang.management.ManagementFactory.getThreadMXBean();
    private static final boolean CPU_CLOCK = THREADS.isCurrentThreadCpuTimeSupported();

    /**
     * The compile budget's clock: the compiling thread's CPU time where the JVM measures it (a starved machine
     * does not refuse a schema that compiles within the budget; the compile pool's wall-time interrupt stays the
     * backstop), else wall time.
     */
    private static long clock() {
        return CPU_CLOCK ? THREADS.getCurrentThreadCpuTime() : System.nanoTime();
    }

    Node lit(String s, String at) {
        return count(Grammar.lit(s), at);
    }

    Node seq(String at, Node... parts) {
        return count(Grammar.seq(parts), at);
    }

    Node alt(String at, Node... options) {
        return count(Grammar.alt(options), at);
    }

    Node value(Object schema, String at) {
        check(at);
        if (Boolean.TRUE.equals(schema)) {
            return anyValue();
        }
        if (Boolean.FALSE.equals(schema)) {
            return Grammar.fail();
        }
        if (!(schema instanceof Map<?, ?> raw)) {
            throw new UnsupportedSchemaException("schema", "the schema at " + at + " must be an object or a boolean");
        }
        Map<String, Object> m = SchemaKeywords.normalize(raw, at);
        if (m.size() == 1 && m.containsKey("$ref")) {
            return ref(String.valueOf(m.get("$ref")), at); // a rule: shared, and recursion stays finite
        }
        if (m.containsKey("$ref")) {
            return mergedRef(m, at);
        }
        if (m.containsKey("allOf")) {
            m = flatten(m, at, 0);
            if (m == null) {
                return Grammar.fail();
            }
        }
        return shaped(m, at);
    }

    /**
     * A {@code $ref} beside other keywords: a rule per distinct schema (the reference with its siblings), as
     * {@link #ref} makes one per plain reference, so a schema that reaches itself through a reference with siblings
     * (an item's {@code "children": {"$ref": "#/definitions/item", "type": "array"}}) stays a finite grammar
     * instead of being merged into itself level after level until the compile budget stops it (MaskBench's
     * Github_hard o61026 held 5 GB of live heap by then).
     */
    private Node mergedRef(Map<String, Object> m, String at) {
        String key = "merged " + Literals.json(m);
        Rule r = rules.get(key);
        if (r != null) {
            return r; // possibly still being built: a recursive reference
        }
        r = count(new Rule(key), at);
        rules.put(key, r);
        Map<String, Object> flat = flatten(m, at, 0);
        r.body = flat == null ? Grammar.fail() : shaped(flat, at);
        return r;
    }

    /** A normalised schema without {@code $ref} or {@code allOf} at its top. */
    private Node shaped(Map<String, Object> m, String at) {
        if (m.containsKey("not")) {
            return negated(m, at);
        }
        for (String combinator : List.of("anyOf", "oneOf")) {
            if (m.containsKey(combinator)) {
                if (!(m.get(combinator) instanceof List<?> list) || list.isEmpty()) {
                    throw new UnsupportedSchemaException(combinator, combinator + " at " + at
                            + " must be a non-empty array");
                }
                // siblings apply to every branch: anyOf [a, b] beside s is anyOf [s and a, s and b]
                Map<String, Object> rest = new LinkedHashMap<>(m);
                rest.remove(combinator);
                List<Node> b = new ArrayList<>();
                for (int i = 0; i < list.size(); i++) {
                    Object branch = rest.isEmpty() ? list.get(i) : SchemaKeywords.both(rest, list.get(i));
                    b.add(value(branch, at + "/" + combinator + "/" + i));
                }
                if (combinator.equals("oneOf")) {
                    b = OneOfCheck.exclusive(b, list, (i, others) -> exclusiveBranch(rest, list.get(i), others,
                            at + "/oneOf/" + i));
                }
                return alt(at, b.toArray(Node[]::new));
            }
        }
        if (m.containsKey("enum") || m.containsKey("const")) {
            return enumeration(m, at);
        }
        Node typed = typed(m, at);
        return typed == null ? anyValue() : typed;
    }

    /**
     * A oneOf branch AND NOT the branches it may overlap. A branch that is only a {@code $ref} becomes a rule
     * shared by every oneOf excluding the same others from it, so a recursive schema stays a finite grammar.
     */
    private Node exclusiveBranch(Map<String, Object> rest, Object branch, List<Object> others, String at) {
        if (!rest.isEmpty() || !(branch instanceof Map<?, ?> raw)) {
            return value(OneOfCheck.only(rest, branch, others), at);
        }
        Map<String, Object> m = SchemaKeywords.normalize(raw, at);
        if (m.size() != 1 || !m.containsKey("$ref")) {
            return value(OneOfCheck.only(rest, branch, others), at);
        }
        String key = "oneOf " + m.get("$ref") + " and not " + Literals.json(others);
        Rule r = rules.get(key);
        if (r != null) {
            return r;
        }
        r = count(new Rule(key), at);
        rules.put(key, r);
        r.body = value(OneOfCheck.only(rest, branch, others), at);
        return r;
    }

    /** {@code m} with its {@code not} as the union of positive schemas ({@link Negation}). */
    private Node negated(Map<String, Object> m, String at) {
        if (++negations > MAX_FLATTEN) {
            throw new UnsupportedSchemaException("not", "not at " + at + " nests more than " + MAX_FLATTEN
                    + " levels (through $ref)");
        }
        try {
            Map<String, Object> rest = new LinkedHashMap<>(m);
            Object not = rest.remove("not");
            List<Map<String, Object>> branches = Negation.and(rest, not, r -> resolve(r, at), at);
            nodes += branches.size();
            List<Node> b = new ArrayList<>();
            for (Map<String, Object> branch : branches) {
                b.add(value(branch, at));
            }
            return b.size() == 1 ? b.getFirst() : alt(at, b.toArray(Node[]::new));
        } finally {
            negations--;
        }
    }

    /**
     * A schema with {@code $ref} or {@code allOf} beside other keywords as one schema: the referenced schema and
     * every branch merged with the rest ({@link SchemaKeywords#merge}); null when nothing satisfies them all.
     */
    private Map<String, Object> flatten(Map<String, Object> m, String at, int depth) {
        check(at);
        if (depth > MAX_FLATTEN) {
            throw new UnsupportedSchemaException("$ref", "allOf/$ref at " + at + " nest more than " + MAX_FLATTEN
                    + " levels without a property or item between them");
        }
        List<Map<String, Object>> parts = new ArrayList<>();
        Map<String, Object> own = new LinkedHashMap<>(m);
        Object ref = own.remove("$ref");
        Object all = own.remove("allOf");
        if (ref != null) {
            parts.add(part(resolve(String.valueOf(ref), at), String.valueOf(ref), depth));
        }
        if (all != null) {
            if (!(all instanceof List<?> l) || l.isEmpty()) {
                throw new UnsupportedSchemaException("allOf", "allOf at " + at + " must be a non-empty array");
            }
            for (int i = 0; i < l.size(); i++) {
                parts.add(part(l.get(i), at + "/allOf/" + i, depth));
            }
        }
        parts.add(own); // last: properties in the order of the referenced schema and the branches, then its own
        if (parts.contains(null)) {
            return null;
        }
        return SchemaKeywords.mergeAll(parts, (x, y) -> SchemaKeywords.merge(x, y, at));
    }

    private Map<String, Object> part(Object schema, String at, int depth) {
        if (Boolean.TRUE.equals(schema)) {
            return new LinkedHashMap<>();
        }
        if (Boolean.FALSE.equals(schema)) {
            return null;
        }
        if (!(schema instanceof Map<?, ?> raw)) {
            throw new UnsupportedSchemaException("schema", "the schema at " + at + " must be an object or a boolean");
        }
        Map<String, Object> n = SchemaKeywords.normalize(raw, at);
        return n.containsKey("$ref") || n.containsKey("allOf") ? flatten(n, at, depth + 1) : n;
    }

    private Node ref(String ref, String at) {
        Rule r = rules.get(ref);
        if (r != null) {
            return r; // possibly still being built: a recursive reference
        }
        Object target = resolve(ref, at);
        r = count(new Rule(ref), at);
        rules.put(ref, r);
        r.body = value(target, ref);
        return r;
    }

    /** The schema a local {@code $ref} points to. */
    Object resolve(String ref, String at) {
        if (!ref.equals("#") && !ref.startsWith("#/")) {
            throw new UnsupportedSchemaException("$ref", "$ref '" + ref + "' at " + at
                    + " is not a local reference (#/$defs/... or #/definitions/...)");
        }
        Object target = root;
        for (String part : ref.length() < 2 ? new String[0] : ref.substring(2).split("/")) {
            String key = part.replace("~1", "/").replace("~0", "~");
            if (key.contains("%")) {
                try {
                    key = java.net.URLDecoder.decode(key.replace("+", "%2B"), StandardCharsets.UTF_8);
                } catch (IllegalArgumentException e) {
                    // not percent-encoded: the name as written
                }
            }
            target = target instanceof Map<?, ?> m ? m.get(key) : target instanceof List<?> l
                    && key.matches("\\d{1,9}") && Integer.parseInt(key) < l.size() ? l.get(Integer.parseInt(key))
                    : null;
        }
        if (target == null) {
            throw new UnsupportedSchemaException("$ref", "$ref '" + ref + "' at " + at + " points to nothing");
        }
        return target;
    }

    private Node enumeration(Map<String, Object> m, String at) {
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
        Set<String> types = SchemaKeywords.types(m, at);
        java.util.function.Predicate<String> others = others(m, at);
        java.util.function.Predicate<Object> excluded = Negation.excluded(m, at, limits);
        List<byte[]> texts = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        long total = 0;
        for (Object v : values) {
            if (types != null && !types.contains(SchemaKeywords.typeOf(v)) && !(types.contains("number") && SchemaKeywords.typeOf(v).equals(
                    "integer"))) {
                continue;
            }
            String s = Literals.json(v);
            if (seen.add(s) && !excluded.test(v) && others.test(s)) {
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

    /**
     * The test of the keywords beside {@code enum}/{@code const} (other than type and nullable, which {@link
     * #typeOf} applies): a value stays when its JSON text is in the grammar of those keywords, compiled on their
     * own by a fresh compiler (its rules apart from this compile's, which may still be under construction).
     */
    private java.util.function.Predicate<String> others(Map<String, Object> m, String at) {
        Map<String, Object> rest = new LinkedHashMap<>(m);
        for (String k : List.of("enum", "const", "type", "nullable", Negation.NOT_STRINGS, Negation.NOT_PATTERNS)) {
            rest.remove(k);
        }
        if (rest.isEmpty()) {
            return s -> true;
        }
        SchemaCompiler sub = new SchemaCompiler(root, limits, deadline, openByDefault, lexemes);
        Grammar g = Grammar.of(sub.value(rest, at));
        nodes += sub.nodes;
        Parser p = new Parser(limits);
        Parser.Config[] start = p.start(g.root);
        return s -> {
            Parser.Config[] cs = p.step(start, s.getBytes(StandardCharsets.UTF_8));
            return cs.length > 0 && p.accepting(cs);
        };
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
            if (m.containsKey("properties") || m.containsKey("required") || m.containsKey("additionalProperties")
                    || m.containsKey(Negation.ABSENT) || ObjectSchemas.applies(m)) {
                types.add("object");
            } else if (m.containsKey("items") || m.containsKey("minItems") || m.containsKey("maxItems")) {
                types.add("array");
            } else if (m.containsKey("minLength") || m.containsKey("maxLength") || m.containsKey("pattern")
                    || m.containsKey("format") || m.containsKey(Negation.NOT_STRINGS)
                    || m.containsKey(Negation.NOT_PATTERNS)) {
                types.add("string");
            } else if (NumberRanges.constrains(m)) {
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
                case "string" -> count(string(m, at), at);
                case "integer" -> count(ScalarSchemas.numeric(true, m, at, limits, lexemes), at);
                case "number" -> count(ScalarSchemas.numeric(false, m, at, limits, lexemes), at);
                case "boolean" -> alt(at, lit("true", at), lit("false", at));
                case "null" -> lit("null", at);
                case "object" -> object(m, at);
                case "array" -> array(m, at);
                default -> throw new UnsupportedSchemaException("type", "unknown type '" + t + "' at " + at);
            });
        }
        return alt(at, options.toArray(Node[]::new));
    }

    /** Any JSON value (free-form parts of a schema): a recursive rule, built once per compile. */
    Node anyValue() {
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
        anyValue.body = alt(at, object, array, string, count(new Lex(ScalarSchemas.NUMBER_LEXEME, 0, -1), at),
                lit("true", at), lit("false", at), lit("null", at));
        return anyValue;
    }

    /** A string of {@code m}'s string keywords ({@link ScalarSchemas#string}). */
    Node string(Map<?, ?> m, String at) {
        return ScalarSchemas.string(m, at, limits, () -> check(at), lexemes);
    }

    /** JSON whitespace inside objects and arrays. */
    Node ws() {
        return ws;
    }

    ConstraintLimits limits() {
        return limits;
    }

    /** Whether an object without additionalProperties takes undeclared members. */
    boolean openByDefault() {
        return openByDefault;
    }

    /** The names of the rules built so far (a refused part's half-built rules are dropped by retaining these). */
    Set<String> ruleNames() {
        return rules.keySet();
    }

    private Node object(Map<?, ?> m, String at) {
        return ObjectGrammar.object(this, m, at);
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
        if (m.get("prefixItems") instanceof List<?> prefix && !prefix.isEmpty()) {
            return tuple(prefix, item, min, max, at);
        } else if (m.containsKey("prefixItems") && !(m.get("prefixItems") instanceof List<?>)) {
            throw new UnsupportedSchemaException("prefixItems", "prefixItems at " + at + " must be an array");
        }
        if (max == 0) {
            return seq(at, open, ws, close);
        }
        Node list = seq(at, count(new Rep(seq(at, item, ws), seq(at, lit(",", at), ws), Math.max(1, min), max), at),
                close);
        return seq(at, open, ws, min == 0 ? alt(at, close, list) : list);
    }

    /**
     * An array whose first items have their own schemas ({@code prefixItems}, draft 4's array {@code items}) and
     * whose later items are {@code rest}, {@code min..max} items in all. Built from the back: {@code after[i]}
     * is what may follow once {@code i} items are written.
     */
    private Node tuple(List<?> prefix, Node rest, int min, int max, String at) {
        int n = prefix.size();
        Node close = lit("]", at);
        Node comma = seq(at, lit(",", at), ws);
        int last = max < 0 ? n : Math.min(n, max);
        Node[] after = new Node[last + 1];
        for (int i = last; i >= 1; i--) {
            Node end = i >= min ? close : Grammar.fail();
            Node more;
            if (max >= 0 && i >= max) {
                more = Grammar.fail();
            } else if (i < n) {
                more = seq(at, comma, value(prefix.get(i), at + "/prefixItems/" + i), ws, after[i + 1]);
            } else {
                more = seq(at, comma, count(new Rep(seq(at, rest, ws), comma, Math.max(1, min - n),
                        max < 0 ? -1 : max - n), at), close);
            }
            after[i] = alt(at, end, more);
        }
        Node first = last == 0 ? Grammar.fail() : seq(at, value(prefix.get(0), at + "/prefixItems/0"), ws, after[1]);
        return seq(at, lit("[", at), ws, alt(at, min == 0 ? close : Grammar.fail(), first));
    }

    static UnsupportedSchemaException unsupported(String keyword, String at) {
        return SchemaKeywords.unsupported(keyword, at);
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
