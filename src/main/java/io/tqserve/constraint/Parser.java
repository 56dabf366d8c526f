package io.tqserve.constraint;

import io.tqserve.constraint.Grammar.Alt;
import io.tqserve.constraint.Grammar.Lex;
import io.tqserve.constraint.Grammar.Lit;
import io.tqserve.constraint.Grammar.Node;
import io.tqserve.constraint.Grammar.Rep;
import io.tqserve.constraint.Grammar.Rule;
import io.tqserve.constraint.Grammar.Seq;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The runtime of a {@link Grammar}: a parser over bytes whose state is a small deduplicated set of
 * configurations, each a leaf (a position in a literal, or a lexeme's automaton state and unit count) on a
 * persistent stack of continuations ({@link Cont}: what follows, sharing tails). Nondeterminism (alternatives with
 * a common prefix, optional members) is several live configurations, at most
 * {@link ConstraintLimits#maxConfigurations()}. A lexeme whose automaton may end is ended lazily, when a byte it
 * cannot take arrives (or at the end of the text), so a string's contents are one configuration, not one per
 * possible end.
 *
 * <p>Continuations are interned per parser (bounded: the table is dropped when full), so equal stacks are one
 * object and their memoised closing bounds are shared across steps and sequences. Thread-safe.
 */
final class Parser {
    static final int AFTER_ITEM = 0;
    static final int AFTER_SEP = 1;
    private static final int INTERN_MAX = 1 << 16;

    /** What follows once the current element is complete: resume {@code node} at {@code pos}, then {@code next}. */
    static final class Cont {
        final Node node;
        final int pos;
        final int count;
        final Cont next;
        final int hash;
        volatile Config[] resumed;
        volatile long[] follow;
        volatile int tokens = -1;

        Cont(Node node, int pos, int count, Cont next) {
            this.node = node;
            this.pos = pos;
            this.count = count;
            this.next = next;
            this.hash = ((System.identityHashCode(node) * 31 + pos) * 31 + count) * 31 + (next == null ? 0 : next.hash);
        }

        @Override
        public boolean equals(Object o) {
            if (this == o) {
                return true;
            }
            if (!(o instanceof Cont c) || c.hash != hash) {
                return false;
            }
            Cont a = this;
            while (a != null && c != null) {
                if (a == c) {
                    return true;
                }
                if (a.node != c.node || a.pos != c.pos || a.count != c.count || a.hash != c.hash) {
                    return false;
                }
                a = a.next;
                c = c.next;
            }
            return a == c;
        }

        @Override
        public int hashCode() {
            return hash;
        }

        int depth() {
            int d = 0;
            for (Cont c = this; c != null; c = c.next) {
                d++;
            }
            return d;
        }
    }

    /** A leaf: a literal at an offset, a lexeme in a state with a unit count, or {@link #ACCEPT} (leaf null). */
    static final class Config {
        final Node leaf;
        final int pos;
        final int count;
        final Cont k;
        final int hash;

        Config(Node leaf, int pos, int count, Cont k) {
            this.leaf = leaf;
            this.pos = pos;
            this.count = count;
            this.k = k;
            this.hash = ((System.identityHashCode(leaf) * 31 + pos) * 31 + count) * 31 + (k == null ? 0 : k.hash);
        }

        @Override
        public boolean equals(Object o) {
            return this == o || o instanceof Config c && c.hash == hash && c.leaf == leaf && c.pos == pos
                    && c.count == count && Objects.equals(c.k, k);
        }

        @Override
        public int hashCode() {
            return hash;
        }

        @Override
        public String toString() {
            return (leaf == null ? "accept" : leaf instanceof Lit l ? "lit@" + pos + "/" + l.bytes.length
                    : "lex " + ((Lex) leaf).lexeme + " s" + pos + " n" + count) + " depth " + (k == null ? 0
                    : k.depth());
        }
    }

    static final Config ACCEPT = new Config(null, 0, 0, null);
    static final Config[] NONE = new Config[0];

    private final ConstraintLimits limits;
    private final ConcurrentHashMap<Cont, Cont> intern = new ConcurrentHashMap<>();

    Parser(ConstraintLimits limits) {
        this.limits = limits;
    }

    ConstraintLimits limits() {
        return limits;
    }

    long internBytes() {
        return intern.size() * 96L;
    }

    Cont cont(Node node, int pos, int count, Cont next) {
        Cont c = new Cont(node, pos, count, next);
        Cont old = intern.putIfAbsent(c, c);
        if (old != null) {
            return old;
        }
        if (intern.size() > INTERN_MAX) {
            intern.clear();
        }
        return c;
    }

    /** Collects configurations without duplicates, within the budget. */
    final class Out {
        final List<Config> list = new ArrayList<>();
        final HashSet<Config> seen = new HashSet<>();
        int work;

        void add(Config c) {
            if (seen.add(c)) {
                list.add(c);
                if (list.size() > limits.maxConfigurations()) {
                    throw new ConstraintBudgetException("anyOf", "more than " + limits.maxConfigurations()
                            + " parser configurations are alive at once (alternatives or optional properties "
                            + "that share a long prefix)");
                }
            }
        }

        void tick() {
            if (++work > 1_000_000) {
                throw new ConstraintBudgetException("$ref", "a parser step expanded more than 1000000 grammar nodes");
            }
        }

        Config[] toArray() {
            return list.isEmpty() ? NONE : list.toArray(new Config[0]);
        }
    }

    Out out() {
        return new Out();
    }

    /** The configurations at the start of {@code root}. */
    Config[] start(Node root) {
        Out o = new Out();
        expand(root, null, o);
        return o.toArray();
    }

    void expand(Node n, Cont k, Out out) {
        out.tick();
        if (n.minLen >= Grammar.INF) {
            return; // no way to finish: never enter
        }
        switch (n) {
            case Lit l -> out.add(new Config(l, 0, 0, k));
            case Lex l -> out.add(new Config(l, l.lexeme.start(), 0, k));
            case Seq s -> {
                if (s.parts.length == 0) {
                    resume(k, out);
                } else {
                    expand(s.parts[0], s.parts.length == 1 ? k : cont(s, 1, 0, k), out);
                }
            }
            case Alt a -> {
                for (Node o : a.options) {
                    expand(o, k, out);
                }
            }
            case Rule r -> expand(r.body, k, out);
            case Rep r -> {
                if (r.min == 0) {
                    resume(k, out);
                }
                expand(r.item, cont(r, AFTER_ITEM, 1, k), out);
            }
            case AnyOrder m -> m.start(this, k, out);
        }
    }

    /** The configurations once the element under {@code k} is complete (memoised on the continuation). */
    Config[] resumed(Cont k) {
        if (k == null) {
            return new Config[] {ACCEPT};
        }
        Config[] r = k.resumed;
        if (r == null) {
            Out o = new Out();
            resume(k, o);
            r = o.toArray();
            k.resumed = r;
        }
        return r;
    }

    private void resume(Cont k, Out out) {
        out.tick();
        if (k == null) {
            out.add(ACCEPT);
            return;
        }
        switch (k.node) {
            case Seq s -> {
                int i = k.pos;
                expand(s.parts[i], i == s.parts.length - 1 ? k.next : cont(s, i + 1, 0, k.next), out);
            }
            case Rep r -> {
                int n = k.count;
                if (k.pos == AFTER_ITEM) {
                    if (n >= r.min) {
                        resume(k.next, out);
                    }
                    if (r.max < 0 || n < r.max) {
                        if (r.sep != null) {
                            expand(r.sep, cont(r, AFTER_SEP, n, k.next), out);
                        } else {
                            expand(r.item, cont(r, AFTER_ITEM, bump(r, n), k.next), out);
                        }
                    }
                } else {
                    expand(r.item, cont(r, AFTER_ITEM, bump(r, n), k.next), out);
                }
            }
            case AnyOrder m -> m.resume(this, k, out);
            default -> throw new IllegalStateException("continuation of " + k.node);
        }
    }

    /** The next item count; unbounded repetitions count only up to their minimum (so equal stacks dedupe). */
    private static int bump(Rep r, int n) {
        return r.max < 0 ? Math.min(n + 1, Math.max(r.min, 1)) : n + 1;
    }

    /** Whether a lexeme configuration may end here (counted: between units, enough of them). */
    static boolean canEnd(Config c) {
        if (!(c.leaf instanceof Lex l)) {
            return false;
        }
        Lexeme x = l.lexeme;
        return x.counted ? c.pos == x.start() && c.count >= l.min : x.accepting(c.pos);
    }

    /** Adds to {@code out} the configurations after byte {@code b} from {@code c}. */
    void step(Config c, int b, Out out) {
        switch (c.leaf) {
            case null -> {
            }
            case Lit l -> {
                if ((l.bytes[c.pos] & 0xFF) == b) {
                    if (c.pos + 1 == l.bytes.length) {
                        for (Config r : resumed(c.k)) {
                            out.add(r);
                        }
                    } else {
                        out.add(new Config(l, c.pos + 1, 0, c.k));
                    }
                }
            }
            case Lex l -> {
                Lexeme x = l.lexeme;
                if (x.counted) {
                    if (c.pos == x.start()) {
                        if (l.max < 0 || c.count < l.max) {
                            int t = x.step(c.pos, b);
                            if (t >= 0) {
                                int n = l.max < 0 ? Math.min(c.count + 1, Math.max(l.min, 1)) : c.count + 1;
                                out.add(new Config(l, t, n, c.k));
                            }
                        }
                    } else {
                        int t = x.step(c.pos, b);
                        if (t >= 0) {
                            out.add(new Config(l, t, c.count, c.k));
                        }
                    }
                } else {
                    int t = x.step(c.pos, b);
                    if (t >= 0) {
                        out.add(new Config(l, t, 0, c.k));
                    }
                }
                if (canEnd(c)) {
                    out.tick();
                    for (Config r : resumed(c.k)) {
                        step(r, b, out);
                    }
                }
            }
            default -> throw new IllegalStateException();
        }
    }

    /** The configurations after byte {@code b}. */
    Config[] step(Config[] cs, int b) {
        if (cs.length == 1) { // the common case without the set: inside a literal, or a lexeme that cannot end
            Config c = cs[0];
            if (c.leaf instanceof Lit l && c.pos + 1 < l.bytes.length) {
                return (l.bytes[c.pos] & 0xFF) == b ? new Config[] {new Config(l, c.pos + 1, 0, c.k)} : NONE;
            }
            if (c.leaf instanceof Lex l && !canEnd(c)) {
                Out o = new Out();
                step(c, b, o);
                return o.toArray();
            }
        }
        Out o = new Out();
        for (Config c : cs) {
            step(c, b, o);
        }
        return o.toArray();
    }

    /** The configurations after {@code bytes} (empty if rejected). */
    Config[] step(Config[] cs, byte[] bytes) {
        Config[] cur = cs;
        for (int i = 0; i < bytes.length && cur.length > 0; i++) {
            cur = step(cur, bytes[i] & 0xFF);
        }
        return cur;
    }

    static boolean accepting(Config c, Parser p) {
        if (c.leaf == null) {
            return true;
        }
        if (canEnd(c)) {
            for (Config r : p.resumed(c.k)) {
                if (accepting(r, p)) {
                    return true;
                }
            }
        }
        return false;
    }

    boolean accepting(Config[] cs) {
        for (Config c : cs) {
            if (accepting(c, this)) {
                return true;
            }
        }
        return false;
    }

    /** The bytes that may come next from {@code c}, ORed into {@code into} (a 256-bit set). */
    void first(Config c, long[] into) {
        switch (c.leaf) {
            case null -> {
            }
            case Lit l -> {
                int b = l.bytes[c.pos] & 0xFF;
                into[b >>> 6] |= 1L << b;
            }
            case Lex l -> {
                Lexeme x = l.lexeme;
                if (!(x.counted && c.pos == x.start() && l.max >= 0 && c.count >= l.max)) {
                    long[] f = x.firstBytes(c.pos);
                    for (int i = 0; i < 4; i++) {
                        into[i] |= f[i];
                    }
                }
                if (canEnd(c)) {
                    long[] f = follow(c.k);
                    for (int i = 0; i < 4; i++) {
                        into[i] |= f[i];
                    }
                }
            }
            default -> throw new IllegalStateException();
        }
    }

    /** The bytes that may come first once the element under {@code k} is complete (memoised). */
    long[] follow(Cont k) {
        if (k != null && k.follow != null) {
            return k.follow;
        }
        long[] f = new long[4];
        for (Config r : resumed(k)) {
            first(r, f);
        }
        if (k != null) {
            k.follow = f;
        }
        return f;
    }

    static String describe(Config[] cs) {
        return Arrays.toString(cs);
    }
}
