package io.tqserve.constraint;

import dk.brics.automaton.Automaton;
import io.tqserve.constraint.Grammar.Lex;
import io.tqserve.constraint.Grammar.Node;
import io.tqserve.constraint.Grammar.Rep;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Objects with the keywords that relate members to each other or to their names, for {@link SchemaCompiler}:
 * {@code patternProperties}, {@code propertyNames}, {@code minProperties}/{@code maxProperties} and the
 * dependencies that name properties ({@code dependentRequired}, draft 7's array-valued {@code dependencies}, and
 * schema-valued ones that only list {@code required} properties). Names {@link Negation#ABSENT} rules out are
 * named members that may not appear.
 *
 * <p>Named members (the properties, the required names and the names of dependencies) are written in that order,
 * each optional one may be left out; a named member's value satisfies its property schema and every pattern that
 * matches its name (additionalProperties when neither applies). Members of other names follow them, in any order
 * (unless the object has named members but neither patternProperties nor propertyNames: then, as in the plain
 * object grammar, only named members are written): their names are split into disjoint classes of characters by the patterns they match (a name matching two
 * patterns takes both schemas; one matching none takes additionalProperties), the named members' names left out,
 * so every member meets exactly the schemas JSON Schema applies to it. The classes are computed on characters, so
 * whatever spelling of a name a class accepts decodes to a name of that class. Member counts and which named
 * members are present are tracked in the grammar: one node per (member, count so far, presence of the members a
 * later dependency looks back at), within the compile's node budget.
 */
final class ObjectSchemas {
    /** Most name classes the patterns of one object may split names into. */
    static final int MAX_CLASSES = 64;
    /** Most named members whose presence a dependency tracks. */
    static final int MAX_TRACKED = 12;

    private final SchemaCompiler c;
    private final String at;
    private final List<String> names = new ArrayList<>();
    private final List<Node> members = new ArrayList<>();
    private final List<Boolean> required = new ArrayList<>();
    /** For each named member, the named members it requires when present (dependencies). */
    private final List<Set<Integer>> needs = new ArrayList<>();
    private final Map<String, Node> memo = new HashMap<>();
    private int[] lastUse;
    private Node extra;
    private int min;
    private int max;
    private int cap;

    private ObjectSchemas(SchemaCompiler c, String at) {
        this.c = c;
        this.at = at;
    }

    /** Whether {@link #object} is needed: the schema uses a keyword the plain object grammar does not enforce. */
    static boolean applies(Map<?, ?> m) {
        for (String k : List.of("patternProperties", "propertyNames", "minProperties", "maxProperties",
                "dependentRequired", "dependencies")) {
            if (m.containsKey(k)) {
                return true;
            }
        }
        return false;
    }

    static Node object(SchemaCompiler c, Map<?, ?> m, String at) {
        return new ObjectSchemas(c, at).build(m);
    }

    private Node build(Map<?, ?> m) {
        Map<?, ?> props = map(m, "properties");
        Map<?, ?> patterns = map(m, "patternProperties");
        Object additional = m.get("additionalProperties");
        Automaton allowed = ObjectKeywords.propertyNames(c, m.get("propertyNames"), at);
        min = Scalars.count(m, "minProperties", at, 0);
        max = Scalars.count(m, "maxProperties", at, -1);
        if (max >= 0 && max < min) {
            return Grammar.fail();
        }
        Map<String, List<String>> deps = ObjectKeywords.dependencies(m, at);
        Set<String> named = new LinkedHashSet<>();
        props.keySet().forEach(k -> named.add(String.valueOf(k)));
        if (m.get("required") instanceof List<?> r) {
            r.forEach(x -> named.add(String.valueOf(x)));
        } else if (m.containsKey("required")) {
            throw new UnsupportedSchemaException("required", "required at " + at + " must be an array");
        }
        deps.forEach((k, v) -> {
            named.add(k);
            named.addAll(v);
        });
        Set<String> absent = Negation.absent(m, at); // names a negated required rules out
        named.addAll(absent);
        List<Automaton> regexes = new ArrayList<>();
        for (Object p : patterns.keySet()) {
            regexes.add(EcmaRegex.search(String.valueOf(p), c.limits().maxLexemeStates()));
        }
        Set<String> req = new LinkedHashSet<>();
        if (m.get("required") instanceof List<?> r) {
            r.forEach(x -> req.add(String.valueOf(x)));
        }
        for (String name : named) {
            List<Object> schemas = new ArrayList<>();
            if (props.containsKey(name)) {
                schemas.add(props.get(name));
            }
            int i = 0;
            for (Object p : patterns.keySet()) {
                if (regexes.get(i++).run(name)) {
                    schemas.add(patterns.get(p));
                }
            }
            if (schemas.isEmpty()) {
                schemas.add(additional == null ? Boolean.TRUE : additional);
            }
            if (allowed != null && !allowed.run(name) || absent.contains(name)) {
                schemas = List.of(Boolean.FALSE);
            }
            Node value = c.value(conjunction(schemas), at + "/properties/" + name);
            names.add(name);
            members.add(c.seq(at, c.lit(SchemaCompiler.quote(name), at), c.ws(), c.lit(":", at), c.ws(), value,
                    c.ws()));
            required.add(req.contains(name));
        }
        for (String name : names) {
            Set<Integer> need = new LinkedHashSet<>();
            deps.getOrDefault(name, List.of()).forEach(d -> need.add(names.indexOf(d)));
            need.remove(names.indexOf(name));
            needs.add(need);
        }
        extra = others(patterns, regexes, additional, allowed);
        track();
        cap = max >= 0 ? max : Math.max(min, 1);
        return c.seq(at, c.lit("{", at), c.ws(), from(0, 0, 0L));
    }

    /**
     * The members of names not named by the schema, one of them (name, value, trailing whitespace), or null when
     * none may appear: one alternative per non-empty class of names (the patterns a name matches, and those it
     * does not), found depth first, a class dropped as soon as it is empty.
     */
    private Node others(Map<?, ?> patterns, List<Automaton> regexes, Object additional, Automaton allowed) {
        if (regexes.isEmpty() && allowed == null && !names.isEmpty()) {
            // as the plain object grammar: no member beside the named ones (a subset of the documents), which
            // spares building the automaton of every name but the named ones
            return null;
        }
        Automaton start = allowed != null ? allowed.clone() : EcmaRegex.anyString();
        if (!names.isEmpty()) {
            // the names as a minimal DFA built directly (a union of strings would be determinised to complement it)
            start = start.minus(Automaton.makeStringUnion(names.toArray(CharSequence[]::new)));
        }
        start = CharDfa.minimal(start);
        List<Automaton> classes = new ArrayList<>();
        List<List<Integer>> matches = new ArrayList<>();
        split(start, 0, new ArrayList<>(), regexes, classes, matches);
        List<Object> values = new ArrayList<>(patterns.values());
        List<Node> options = new ArrayList<>();
        for (int k = 0; k < classes.size(); k++) {
            List<Integer> matched = matches.get(k);
            List<Object> schemas = new ArrayList<>();
            matched.forEach(i -> schemas.add(values.get(i)));
            if (schemas.isEmpty()) {
                schemas.add(additional == null ? Boolean.TRUE : additional);
            }
            Node value = c.value(conjunction(schemas), at + (matched.isEmpty() ? "/additionalProperties"
                    : "/patternProperties"));
            if (value == Grammar.fail()) {
                continue;
            }
            Node name;
            if (regexes.isEmpty() && names.isEmpty() && allowed == null) {
                name = new Lex(JsonLexemes.STRING_CHAR, 0, -1); // every name: any spelling of any string
            } else {
                String what = matched.isEmpty() ? "names of no pattern" : "names of patterns " + matched;
                ByteNfa bytes = JsonStringContent.nfa(classes.get(k), 16 * c.limits().maxLexemeStates(),
                        "the automaton of the " + what, "patternProperties");
                c.checkNow(at);
                name = new Lex(JsonLexemes.of("member " + what, bytes, c.limits().maxLexemeStates(),
                        "patternProperties"), 0, -1);
                c.checkNow(at);
            }
            options.add(c.seq(at, c.lit("\"", at), c.count(name, at), c.lit("\"", at), c.ws(), c.lit(":", at),
                    c.ws(), value, c.ws()));
        }
        return options.isEmpty() ? null : c.alt(at, options.toArray(Node[]::new));
    }

    /**
     * The non-empty classes of {@code names} by the patterns from {@code i} on that they match (depth first, a
     * class dropped as soon as it is empty), each with the indices of the patterns it matches.
     */
    private void split(Automaton names, int i, List<Integer> matched, List<Automaton> regexes,
            List<Automaton> classes, List<List<Integer>> matches) {
        c.checkNow(at);
        if (names.isEmpty()) {
            return;
        }
        if (i == regexes.size()) {
            if (classes.size() >= MAX_CLASSES) {
                throw new ConstraintBudgetException("patternProperties", "the patterns of patternProperties at " + at
                        + " split member names into more than " + MAX_CLASSES + " classes");
            }
            classes.add(names);
            matches.add(matched);
            return;
        }
        Automaton in = CharDfa.minimal(names.intersection(regexes.get(i)));
        List<Integer> with = new ArrayList<>(matched);
        with.add(i);
        split(in, i + 1, with, regexes, classes, matches);
        Automaton out = CharDfa.minimal(names.minus(regexes.get(i)));
        split(out, i + 1, matched, regexes, classes, matches);
    }

    /**
     * Which named members' presence the grammar must remember: {@code lastUse[j]} is the last member whose
     * decision looks at member j (-1: none), the presence bit of j kept until then.
     */
    private void track() {
        int n = names.size();
        lastUse = new int[n];
        java.util.Arrays.fill(lastUse, -1);
        Set<Integer> involved = new LinkedHashSet<>();
        for (int i = 0; i < n; i++) {
            for (int d : needs.get(i)) {
                int later = Math.max(i, d);
                lastUse[Math.min(i, d)] = Math.max(lastUse[Math.min(i, d)], later);
                involved.add(Math.min(i, d));
            }
        }
        if (involved.size() > MAX_TRACKED) {
            throw new ConstraintBudgetException("dependentRequired", "the dependencies at " + at + " relate more "
                    + "than " + MAX_TRACKED + " properties");
        }
    }

    /**
     * What follows once the named members before {@code i} are decided, {@code count} members written (capped:
     * only the bounds tell counts apart) and {@code present} the presence bits still needed.
     */
    private Node from(int i, int count, long present) {
        String key = i + "/" + count + "/" + present;
        Node done = memo.get(key);
        if (done != null) {
            return done;
        }
        c.check(at);
        Node out;
        if (i == names.size()) {
            out = rest(count);
        } else {
            long next = present;
            for (int j = 0; j < i; j++) {
                if (lastUse[j] == i) {
                    next &= ~(1L << j); // no later member looks at j
                }
            }
            Node comma = count > 0 ? c.seq(at, c.lit(",", at), c.ws()) : Grammar.EMPTY;
            boolean mayAbsent = !required.get(i);
            boolean mayPresent = max < 0 || count < max;
            for (int j = 0; j < i; j++) {
                boolean wasPresent = (present & (1L << j)) != 0;
                if (wasPresent && needs.get(j).contains(i)) {
                    mayAbsent = false; // an earlier member requires this one
                }
                if (!wasPresent && needs.get(i).contains(j) && lastUse[j] >= i) {
                    mayPresent = false; // this one requires an earlier member that is absent
                }
            }
            long withBit = lastUse[i] > i ? next | (1L << i) : next;
            Node yes = mayPresent ? c.seq(at, comma, members.get(i), from(i + 1, Math.min(count + 1, cap), withBit))
                    : Grammar.fail();
            Node no = mayAbsent ? from(i + 1, count, next) : Grammar.fail();
            out = c.alt(at, yes, no);
        }
        memo.put(key, out);
        return out;
    }

    /** The members of other names after {@code count} named ones, then the closing brace. */
    private Node rest(int count) {
        Node close = c.lit("}", at);
        Node end = count >= min ? close : Grammar.fail();
        int lo = Math.max(1, min - count);
        int hi = max < 0 ? -1 : max - count;
        if (extra == null || hi == 0) {
            return end;
        }
        Node more = c.seq(at, count > 0 ? c.seq(at, c.lit(",", at), c.ws()) : Grammar.EMPTY,
                c.count(new Rep(extra, c.seq(at, c.lit(",", at), c.ws()), lo, hi), at), close);
        return c.alt(at, end, more);
    }

    private static Object conjunction(List<Object> schemas) {
        return schemas.size() == 1 ? schemas.getFirst() : Map.of("allOf", List.copyOf(schemas));
    }

    private Map<?, ?> map(Map<?, ?> m, String keyword) {
        Object v = m.get(keyword);
        if (v == null) {
            return Map.of();
        }
        if (!(v instanceof Map<?, ?> r)) {
            throw new UnsupportedSchemaException(keyword, keyword + " at " + at + " must be an object");
        }
        return new LinkedHashMap<>(r);
    }
}
