package io.tqserve.constraint;

import io.tqserve.constraint.Grammar.Alt;
import io.tqserve.constraint.Grammar.Lex;
import io.tqserve.constraint.Grammar.Lit;
import io.tqserve.constraint.Grammar.Node;
import io.tqserve.constraint.Grammar.Rep;
import io.tqserve.constraint.Grammar.Rule;
import io.tqserve.constraint.Grammar.Seq;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** {@code oneOf} as a union in which no document matches two branches. */
final class OneOfCheck {
    private OneOfCheck() {
    }

    /** Compiles branch {@code i} of a oneOf anew, excluding the instances of the {@code others} branches. */
    interface Recompile {
        Node apply(int i, List<Object> others);
    }

    /**
     * The branches of a oneOf as an exact union: a branch that a document may match together with another is
     * compiled anew as itself AND NOT each such other ({@link #only}), so that no document matches two branches and
     * one matching two is in none. Branches are disjoint when they start with disjoint bytes (different JSON types)
     * or are disjoint sets of literal values; the others are treated as overlapping.
     */
    static List<Node> exclusive(List<Node> b, List<?> schemas, Recompile recompile) {
        List<long[]> firsts = new ArrayList<>();
        for (Node n : b) {
            firsts.add(first(n, new HashSet<>()));
        }
        List<Node> out = new ArrayList<>(b);
        for (int i = 0; i < b.size(); i++) {
            List<Object> others = new ArrayList<>();
            for (int j = 0; j < b.size(); j++) {
                if (j != i && overlap(firsts.get(i), firsts.get(j)) && !disjointLiterals(schemas.get(i),
                        schemas.get(j))) {
                    others.add(schemas.get(j));
                }
            }
            if (!others.isEmpty()) {
                out.set(i, recompile.apply(i, others));
            }
        }
        return out;
    }

    private static boolean overlap(long[] x, long[] y) {
        return x == null || y == null || (x[0] & y[0]) != 0 || (x[1] & y[1]) != 0 || (x[2] & y[2]) != 0
                || (x[3] & y[3]) != 0;
    }

    /** {@code rest} (the siblings of the oneOf) AND {@code branch} AND NOT each of {@code others}. */
    static Map<String, Object> only(Map<String, Object> rest, Object branch, List<Object> others) {
        List<Object> all = new ArrayList<>();
        if (!rest.isEmpty()) {
            all.add(rest);
        }
        all.add(branch);
        for (Object o : others) {
            all.add(Map.of("not", o));
        }
        Map<String, Object> m = new java.util.LinkedHashMap<>();
        m.put("allOf", all);
        return m;
    }

    static boolean disjointLiterals(Object a, Object b) {
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

    static Set<String> literalValues(Object schema) {
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
    static long[] first(Node n, Set<Node> seen) {
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
            case AnyOrder m -> null;
        };
    }
}
