package io.tqserve.constraint;

import io.tqserve.constraint.Grammar.Lex;
import io.tqserve.constraint.Grammar.Node;
import io.tqserve.constraint.Grammar.Rep;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The grammar of a JSON object schema for {@link SchemaCompiler} (objects with {@code patternProperties},
 * {@code propertyNames}, member counts or dependencies go to {@link ObjectSchemas}): the declared members in any
 * order ({@link AnyOrder}, up to {@link AnyOrder#MAX_MEMBERS}; more in the schema's order), the required ones all,
 * and undeclared members ({@link UndeclaredNames}) where {@code additionalProperties} allows them.
 */
final class ObjectGrammar {
    private ObjectGrammar() {
    }

    static Node object(SchemaCompiler c, Map<?, ?> m, String at) {
        if (ObjectSchemas.applies(m)) {
            return ObjectSchemas.object(c, m, at);
        }
        Object props = m.get("properties");
        List<String> required = new ArrayList<>();
        if (m.get("required") instanceof List<?> r) {
            r.forEach(x -> required.add(String.valueOf(x)));
        } else if (m.containsKey("required")) {
            throw new UnsupportedSchemaException("required", "required at " + at + " must be an array");
        }
        Object additional = m.get("additionalProperties");
        boolean closed = Boolean.FALSE.equals(additional);
        Set<String> absent = Negation.absent(m, at);
        if (absent.stream().anyMatch(required::contains)) {
            return Grammar.fail();
        }
        Node open = c.lit("{", at);
        Node close = c.lit("}", at);
        if (props == null && required.isEmpty()) {
            if (closed) {
                return c.seq(at, open, c.ws(), close);
            }
            Node value = additional instanceof Map<?, ?> am ? c.value(am, at + "/additionalProperties") : c.anyValue();
            Node string = absent.isEmpty() ? c.seq(at, c.lit("\"", at), c.count(new Lex(JsonLexemes.STRING_CHAR, 0, -1), at),
                    c.lit("\"", at)) : c.count(c.string(Map.of(Negation.NOT_STRINGS, new ArrayList<>(absent)),
                    at), at);
            Node member = c.seq(at, string, c.ws(), c.lit(":", at), c.ws(), value, c.ws());
            return c.seq(at, open, c.ws(), c.alt(at, close, c.seq(at, c.count(new Rep(member, c.seq(at, c.lit(",", at), c.ws()), 1, -1),
                    at), close)));
        }
        if (props != null && !(props instanceof Map<?, ?>)) {
            throw new UnsupportedSchemaException("properties", "properties at " + at + " must be an object");
        }
        Map<?, ?> p = props instanceof Map<?, ?> pm ? pm : Map.of();
        List<Node> members = new ArrayList<>();
        List<Boolean> req = new ArrayList<>();
        List<String> names = new ArrayList<>();
        for (Map.Entry<?, ?> e : p.entrySet()) {
            String name = String.valueOf(e.getKey());
            names.add(name);
            if (absent.contains(name)) {
                continue; // optional (required ones failed above): left out
            }
            Node value = c.value(e.getValue(), at + "/properties/" + name);
            members.add(c.seq(at, c.lit(SchemaCompiler.quote(name), at), c.ws(), c.lit(":", at), c.ws(), value, c.ws()));
            req.add(required.contains(name));
        }
        Node undeclared = null; // the value of a member properties does not declare
        for (String r : required) {
            if (!p.containsKey(r)) {
                if (closed) {
                    throw new UnsupportedSchemaException("required", "required property '" + r + "' at " + at
                            + " is not in properties and additionalProperties is false");
                }
                undeclared = undeclared != null ? undeclared : additional instanceof Map<?, ?> am
                        ? c.value(am, at + "/additionalProperties") : c.anyValue();
                members.add(c.seq(at, c.lit(SchemaCompiler.quote(r), at), c.ws(), c.lit(":", at), c.ws(), undeclared, c.ws()));
                names.add(r);
                req.add(true);
            }
        }
        names.addAll(absent); // names the object must not have (not required) are no undeclared members either
        Node extraValue = closed || additional == null && !c.openByDefault() ? null
                : undeclared != null ? undeclared : undeclaredValue(c, additional, at);
        Node extra = extraValue == null ? null : c.count(UndeclaredNames.member(names, extraValue, c.ws(), c.limits()), at);
        int n = members.size();
        if (n >= 1 && n <= AnyOrder.MAX_MEMBERS) { // members in any order, undeclared ones among them
            int requiredBits = 0;
            for (int i = 0; i < n; i++) {
                requiredBits |= req.get(i) ? 1 << i : 0;
            }
            return c.seq(at, open, c.ws(), c.count(new AnyOrder(members.toArray(Node[]::new), requiredBits, extra,
                    c.seq(at, c.lit(",", at), c.ws()), close), at));
        }
        // more members: in the schema's order, undeclared ones after them (the order LLGuidance and MaskBench's
        // instances follow). Built from the back, linear in the members: K[i] = one member from i on (skipping
        // optional ones), then R[next]; R[i] = nothing more (if members i.. are all optional) or ", " K[i]
        Node extras = extra == null ? null : c.count(new Rep(extra, c.seq(at, c.lit(",", at), c.ws()), 1, -1), at);
        Node end = extras == null ? Grammar.EMPTY : c.alt(at, Grammar.EMPTY, c.seq(at, c.lit(",", at), c.ws(), extras));
        Node[] k = new Node[n + 1];
        Node[] r = new Node[n + 1];
        k[n] = Grammar.fail();
        r[n] = end;
        boolean allOptional = true;
        for (int i = n - 1; i >= 0; i--) {
            Node one = c.seq(at, members.get(i), r[i + 1]);
            k[i] = req.get(i) ? one : c.alt(at, one, k[i + 1]);
            allOptional &= !req.get(i);
            Node more = c.seq(at, c.lit(",", at), c.ws(), k[i]);
            r[i] = allOptional ? c.alt(at, end, more) : more;
        }
        Node body = c.seq(at, k[0], close);
        return c.seq(at, open, c.ws(), allOptional ? c.alt(at, close, body, extras == null ? Grammar.fail()
                : c.seq(at, extras, close)) : body);
    }

    /**
     * The value of an undeclared member (additionalProperties' schema, or any value), or null when that schema is
     * one this compiler refuses: the object then takes its declared members only (fewer documents, none invalid).
     */
    private static Node undeclaredValue(SchemaCompiler c, Object additional, String at) {
        if (!(additional instanceof Map<?, ?> am)) {
            return c.anyValue();
        }
        Set<String> before = new HashSet<>(c.ruleNames());
        try {
            return c.value(am, at + "/additionalProperties");
        } catch (UnsupportedSchemaException e) {
            c.ruleNames().retainAll(before); // rules left half-built by the refusal
            return null;
        }
    }
}
