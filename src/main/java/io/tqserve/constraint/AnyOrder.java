package io.tqserve.constraint;

import io.tqserve.constraint.Grammar.Node;
import io.tqserve.constraint.Parser.Cont;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;

/**
 * An object's members in any order, then its closing brace: each declared member at most once, the required ones
 * all, undeclared members ({@code extra}, when allowed) anywhere among them, members separated by {@code sep}.
 * JSON Schema does not order an object's members, so neither does the grammar: a document lists its members as it
 * likes. The parser keeps the set of declared members already written in its continuation (the count of a
 * {@link Cont} on this node, a bit mask), so the state is one small number, not a state per subset: the grammar
 * stays linear in the members. At most {@link #MAX_MEMBERS} declared members (the bits of an int); an object with
 * more is written in the schema's order ({@link SchemaCompiler}).
 *
 * <p>Positions of a continuation: {@link Parser#AFTER_ITEM} (a member is complete: the brace or a separator may
 * follow) and {@link Parser#AFTER_SEP} (a separator is complete: a member follows). Entering the node (just after
 * the opening brace and its whitespace) offers the brace when nothing is required, and every member.
 */
final class AnyOrder extends Node {
    /** Most declared members tracked in any order. */
    static final int MAX_MEMBERS = 32;

    final Node[] members;
    /** Bit i: member i is required. */
    final int required;
    /** An undeclared member (name, colon, value, trailing whitespace), or null when there may be none. */
    final Node extra;
    final Node sep;
    final Node close;

    AnyOrder(Node[] members, int required, Node extra, Node sep, Node close) {
        if (members.length > MAX_MEMBERS) {
            throw new IllegalArgumentException(members.length + " members (at most " + MAX_MEMBERS + ")");
        }
        this.members = members;
        this.required = required;
        this.extra = extra;
        this.sep = sep;
        this.close = close;
    }

    Node[] children() {
        List<Node> out = new ArrayList<>(List.of(members));
        if (extra != null) {
            out.add(extra);
        }
        out.add(sep);
        out.add(close);
        return out.toArray(Node[]::new);
    }

    /** The shortest text: the required members in the schema's order, separated, then the brace. */
    long shortest() {
        long t = close.minLen;
        int n = 0;
        for (int i = 0; i < members.length; i++) {
            if ((required & 1 << i) != 0) {
                t = add(t, add(members[i].minLen, n++ > 0 ? sep.minLen : 0));
            }
        }
        return t;
    }

    private static long add(long a, long b) {
        return a >= Grammar.INF || b >= Grammar.INF ? Grammar.INF : Math.min(Grammar.INF, a + b);
    }

    /** Just after the opening brace and its whitespace. */
    void start(Parser p, Cont k, Parser.Out out) {
        if (required == 0) {
            p.expand(close, k, out);
        }
        member(p, 0, k, out);
    }

    /** Every member not written yet, and an undeclared one. */
    private void member(Parser p, int written, Cont k, Parser.Out out) {
        for (int i = 0; i < members.length; i++) {
            if ((written & 1 << i) == 0) {
                p.expand(members[i], p.cont(this, Parser.AFTER_ITEM, written | 1 << i, k), out);
            }
        }
        if (extra != null) {
            p.expand(extra, p.cont(this, Parser.AFTER_ITEM, written, k), out);
        }
    }

    /** Whether a member may still come after {@code written}. */
    private boolean more(int written) {
        if (extra != null && extra.minLen < Grammar.INF) {
            return true;
        }
        for (int i = 0; i < members.length; i++) {
            if ((written & 1 << i) == 0 && members[i].minLen < Grammar.INF) {
                return true;
            }
        }
        return false;
    }

    void resume(Parser p, Cont c, Parser.Out out) {
        int written = c.count;
        if (c.pos == Parser.AFTER_ITEM) {
            if ((written & required) == required) {
                p.expand(close, c.next, out);
            }
            if (more(written)) {
                p.expand(sep, p.cont(this, Parser.AFTER_SEP, written, c.next), out);
            }
        } else {
            member(p, written, c.next, out);
        }
    }

    /**
     * The shortest text that completes the object from a continuation: after a member, the required members left
     * (each after a separator) and the brace; after a separator, a member first (the first required one left, else
     * the shortest one that may come).
     */
    byte[] closing(int pos, int written, long limit) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        int left = required & ~written;
        if (pos == Parser.AFTER_SEP) {
            Node first = null;
            if (left != 0) {
                int i = Integer.numberOfTrailingZeros(left);
                first = members[i];
                left &= ~(1 << i);
            } else {
                for (int i = 0; i < members.length; i++) {
                    if ((written & 1 << i) == 0 && (first == null || members[i].minLen < first.minLen)) {
                        first = members[i];
                    }
                }
                if (extra != null && (first == null || extra.minLen < first.minLen)) {
                    first = extra;
                }
            }
            o.writeBytes(Grammar.minText(first, limit));
        }
        for (int i = 0; i < members.length; i++) {
            if ((left & 1 << i) != 0) {
                o.writeBytes(Grammar.minText(sep, limit));
                o.writeBytes(Grammar.minText(members[i], limit));
                if (o.size() > limit) {
                    throw new ConstraintBudgetException("required", "the shortest completion exceeds " + limit
                            + " bytes");
                }
            }
        }
        o.writeBytes(Grammar.minText(close, limit));
        return o.toByteArray();
    }

    /** The shortest text of the node (for {@link Grammar#minText}). */
    void writeMin(java.util.function.Consumer<Node> write) {
        int n = 0;
        for (int i = 0; i < members.length; i++) {
            if ((required & 1 << i) != 0) {
                if (n++ > 0) {
                    write.accept(sep);
                }
                write.accept(members[i]);
            }
        }
        write.accept(close);
    }
}
