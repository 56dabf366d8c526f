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

/** When {@code oneOf} may be compiled as a union: no document can match two of its branches. */
final class OneOfCheck {
    private OneOfCheck() {
    }

    /**
     * oneOf is an exact union only when no document matches two branches: accepted when the branches start with
     * disjoint bytes (different JSON types) or are disjoint sets of literal values.
     */
    static void disjoint(List<Node> b, List<?> schemas, String at) {
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
        };
    }
}
