package io.tqserve.constraint;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A context-free grammar over bytes, immutable once built and shareable: literals, lexemes (regular pieces:
 * string contents with a character count, numbers, formats, whitespace), sequences, alternations, named rules
 * (which may refer to themselves: recursive {@code $ref}s) and bounded repetitions with a separator. Counts live
 * in the parser's state, never in the grammar's size: {@code maxItems: 20000} is one repetition node.
 *
 * <p>Building a grammar analyses it once: the shortest text of every node (by a fixpoint over the rules, so a
 * recursive rule without a way out has none and is refused), and left recursion (a rule that reaches itself
 * without output in between), which is refused naming {@code $ref}.
 */
public final class Grammar {
    static final long INF = Long.MAX_VALUE / 4;

    /** A node of the grammar. {@link #minLen} is the length of its shortest text, set when a grammar is built. */
    abstract static sealed class Node permits Lit, Lex, Seq, Alt, Rule, Rep, AnyOrder {
        long minLen = -1;
        /** Shortest text, set lazily (bounded by the limits' closing bytes). */
        volatile byte[] minText;
    }

    static final class Lit extends Node {
        final byte[] bytes;

        Lit(byte[] bytes) {
            this.bytes = bytes;
        }
    }

    /** A lexeme; counted lexemes read {@code min..max} units ({@code max < 0}: unbounded). */
    static final class Lex extends Node {
        final Lexeme lexeme;
        final int min;
        final int max;

        Lex(Lexeme lexeme, int min, int max) {
            this.lexeme = lexeme;
            this.min = min;
            this.max = max;
        }
    }

    static final class Seq extends Node {
        final Node[] parts;

        Seq(Node[] parts) {
            this.parts = parts;
        }
    }

    static final class Alt extends Node {
        final Node[] options;

        Alt(Node[] options) {
            this.options = options;
        }
    }

    /** A named rule: its body is set once while the grammar is built (a {@code $ref} may point back to it). */
    static final class Rule extends Node {
        final String name;
        Node body;

        Rule(String name) {
            this.name = name;
        }
    }

    /** {@code item (sep item)*} with {@code min..max} items ({@code max < 0}: unbounded); sep may be null. */
    static final class Rep extends Node {
        final Node item;
        final Node sep;
        final int min;
        final int max;

        Rep(Node item, Node sep, int min, int max) {
            this.item = item;
            this.sep = sep;
            this.min = min;
            this.max = max;
        }
    }

    final Node root;
    private final int nodes;

    private Grammar(Node root, int nodes) {
        this.root = root;
        this.nodes = nodes;
    }

    /** Number of nodes (for budgets and tests). */
    public int nodes() {
        return nodes;
    }

    /** Length in bytes of the shortest text of the grammar. */
    public long minBytes() {
        return root.minLen;
    }

    // ---- building ----

    static final Node EMPTY = new Seq(new Node[0]);
    private static final Node FAIL = new Alt(new Node[0]);

    /**
     * The byte that starts the bytes of a special token in a constraint's {@link Vocabulary}: 0xFF never occurs in
     * UTF-8, so no text (JSON, free text) contains it, and a vocabulary built for constraints gives a special token
     * that a grammar may write the bytes {@code 0xFF, slot} ({@link #specialToken}) and drops the ordinary tokens
     * holding 0xFF (byte-fallback pieces of invalid UTF-8).
     */
    public static final int SPECIAL_LEAD = 0xFF;

    /**
     * Exactly the special token of {@code slot} (0..255): the vocabulary gives that token the bytes {@code 0xFF,
     * slot}, so only that token, never text, can write this (a Mistral {@code [TOOL_CALLS]}).
     */
    public static Grammar specialToken(int slot) {
        if (slot < 0 || slot > 255) {
            throw new IllegalArgumentException("special-token slot " + slot + " is not in 0..255");
        }
        return of(lit(specialBytes(slot)));
    }

    /** The bytes of the special token of {@code slot} in a constraint's vocabulary. */
    public static byte[] specialBytes(int slot) {
        return new byte[] {(byte) SPECIAL_LEAD, (byte) slot};
    }

    /** A grammar of exactly {@code s} (UTF-8). */
    public static Grammar literal(String s) {
        return of(lit(s));
    }

    /** The concatenation. */
    public static Grammar seq(Grammar... parts) {
        Node[] n = new Node[parts.length];
        for (int i = 0; i < parts.length; i++) {
            n[i] = parts[i].root;
        }
        return of(seq(n));
    }

    /** The union. */
    public static Grammar alt(List<Grammar> options) {
        return of(alt(options.stream().map(g -> g.root).toArray(Node[]::new)));
    }

    /** {@code item (sep item)*}, {@code min..max} items ({@code max < 0}: unbounded); {@code sep} may be null. */
    public static Grammar repeat(Grammar item, Grammar sep, int min, int max) {
        return of(rep(item.root, sep == null ? null : sep.root, min, max));
    }

    /** This grammar or nothing. */
    public Grammar optional() {
        return of(alt(root, EMPTY));
    }

    /**
     * Free text (any bytes) whose first byte that is not whitespace is none of {@code excluded} (ASCII): content
     * that cannot be taken for the bare start of something else (a Llama 3.1 tool call's {@code {}).
     */
    public static Grammar textNotOpeningWith(String excluded) {
        return of(new Lex(JsonLexemes.textNotOpeningWith(excluded), 0, -1));
    }

    /** Free text (any bytes) that never contains {@code marker}. */
    public static Grammar textWithout(String marker) {
        return of(new Lex(JsonLexemes.textWithout(marker), 0, -1));
    }

    static Node lit(String s) {
        return lit(s.getBytes(StandardCharsets.UTF_8));
    }

    static Node lit(byte[] b) {
        return b.length == 0 ? EMPTY : new Lit(b);
    }

    static Node seq(Node... parts) {
        List<Node> flat = new ArrayList<>();
        for (Node p : parts) {
            if (p == FAIL) {
                return FAIL;
            }
            if (p instanceof Seq s && s.parts.length == 0) {
                continue;
            }
            flat.add(p);
        }
        return flat.size() == 1 ? flat.getFirst() : new Seq(flat.toArray(Node[]::new));
    }

    static Node alt(Node... options) {
        List<Node> keep = new ArrayList<>();
        for (Node o : options) {
            if (o != FAIL && !keep.contains(o)) {
                keep.add(o);
            }
        }
        return keep.isEmpty() ? FAIL : keep.size() == 1 ? keep.getFirst() : new Alt(keep.toArray(Node[]::new));
    }

    static Node rep(Node item, Node sep, int min, int max) {
        if (max == 0) {
            return EMPTY;
        }
        if (min == 1 && max == 1) {
            return item;
        }
        return new Rep(item, sep, min, max);
    }

    static Node fail() {
        return FAIL;
    }

    /** Seals a node into a grammar: analyses every reachable node not yet analysed. */
    static Grammar of(Node root) {
        List<Node> order = new ArrayList<>();
        Set<Node> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        int total = collect(root, seen, order);
        List<Node> fresh = new ArrayList<>();
        for (Node n : order) {
            if (n.minLen < 0) {
                fresh.add(n);
            }
        }
        for (Node n : fresh) {
            n.minLen = INF;
        }
        // fixpoint: each pass can only lower lengths; a pass without change ends it. Bounded: the number of
        // passes needed is at most the number of rules + 2 (each pass settles at least one more rule)
        int rules = 0;
        for (Node n : fresh) {
            if (n instanceof Rule) {
                rules++;
            }
        }
        for (int pass = 0; pass <= rules + 2; pass++) {
            boolean changed = false;
            for (Node n : fresh) {
                long v = compute(n);
                if (v < n.minLen) {
                    n.minLen = v;
                    changed = true;
                }
            }
            if (!changed) {
                break;
            }
            if (Thread.interrupted()) {
                Thread.currentThread().interrupt();
                throw new java.util.concurrent.CancellationException("constraint compile cancelled");
            }
        }
        checkLeftRecursion(fresh);
        return new Grammar(root, total);
    }

    private static int collect(Node root, Set<Node> seen, List<Node> postOrder) {
        // iterative post-order (grammars can be deep)
        java.util.ArrayDeque<Object[]> stack = new java.util.ArrayDeque<>();
        if (!seen.add(root)) {
            return 0;
        }
        stack.push(new Object[] {root, 0});
        while (!stack.isEmpty()) {
            Object[] top = stack.peek();
            Node n = (Node) top[0];
            int i = (Integer) top[1];
            Node[] kids = children(n);
            if (i < kids.length) {
                top[1] = i + 1;
                Node k = kids[i];
                if (k != null && seen.add(k)) {
                    stack.push(new Object[] {k, 0});
                }
            } else {
                stack.pop();
                postOrder.add(n);
            }
        }
        return seen.size();
    }

    static Node[] children(Node n) {
        return switch (n) {
            case Lit l -> new Node[0];
            case Lex l -> new Node[0];
            case Seq s -> s.parts;
            case Alt a -> a.options;
            case Rule r -> new Node[] {r.body};
            case Rep r -> r.sep == null ? new Node[] {r.item} : new Node[] {r.item, r.sep};
            case AnyOrder m -> m.children();
        };
    }

    private static long add(long a, long b) {
        return a >= INF || b >= INF ? INF : Math.min(INF, a + b);
    }

    private static long mul(long a, long k) {
        if (k == 0) {
            return 0;
        }
        return a >= INF ? INF : a > INF / k ? INF : a * k;
    }

    private static long compute(Node n) {
        return switch (n) {
            case Lit l -> l.bytes.length;
            case Lex l -> {
                if (l.lexeme.counted) {
                    yield l.min == 0 ? 0 : mul(unitLen(l.lexeme), l.min);
                }
                byte[] c = l.lexeme.completion(l.lexeme.start());
                yield c == null ? INF : c.length;
            }
            case Seq s -> {
                long t = 0;
                for (Node p : s.parts) {
                    t = add(t, p.minLen);
                }
                yield t;
            }
            case Alt a -> {
                long m = INF;
                for (Node o : a.options) {
                    m = Math.min(m, o.minLen);
                }
                yield m;
            }
            case Rule r -> r.body == null ? INF : r.body.minLen;
            case Rep r -> r.min == 0 ? 0 : add(mul(r.item.minLen, r.min),
                    r.sep == null ? 0 : mul(r.sep.minLen, r.min - 1L));
            case AnyOrder m -> m.shortest();
        };
    }

    static long unitLen(Lexeme x) {
        byte[] u = x.completion(x.start());
        return u == null ? INF : u.length;
    }

    /** Refuses a rule that reaches itself through nodes that may produce nothing (the parser would loop). */
    private static void checkLeftRecursion(List<Node> fresh) {
        Map<Node, Integer> color = new IdentityHashMap<>();
        for (Node n : fresh) {
            if (n instanceof Rule r && !color.containsKey(r)) {
                leftDfs(r, color, new ArrayList<>());
            }
        }
    }

    private static void leftDfs(Node start, Map<Node, Integer> color, List<Node> path) {
        // iterative DFS over "left" edges: the nodes a node may start with
        java.util.ArrayDeque<Object[]> stack = new java.util.ArrayDeque<>();
        stack.push(new Object[] {start, left(start), 0});
        color.put(start, 1);
        while (!stack.isEmpty()) {
            Object[] top = stack.peek();
            Node[] kids = (Node[]) top[1];
            int i = (Integer) top[2];
            if (i < kids.length) {
                top[2] = i + 1;
                Node k = kids[i];
                Integer c = color.get(k);
                if (c == null) {
                    color.put(k, 1);
                    stack.push(new Object[] {k, left(k), 0});
                } else if (c == 1) {
                    String name = k instanceof Rule r ? r.name : "a rule";
                    for (Object[] f : stack) {
                        if (f[0] instanceof Rule r) {
                            name = r.name;
                            break;
                        }
                    }
                    throw new UnsupportedSchemaException("$ref", "$ref '" + name + "' reaches itself before any "
                            + "output (left recursion), which no document can finish");
                }
            } else {
                color.put((Node) top[0], 2);
                stack.pop();
            }
        }
    }

    private static Node[] left(Node n) {
        return switch (n) {
            case Seq s -> {
                List<Node> out = new ArrayList<>();
                for (Node p : s.parts) {
                    out.add(p);
                    if (p.minLen != 0) {
                        break;
                    }
                }
                yield out.toArray(Node[]::new);
            }
            case Rep r -> {
                if (r.item.minLen == 0 && (r.max < 0 || r.max > 1)) {
                    yield new Node[] {r.item, r};
                }
                yield r.sep != null && r.item.minLen == 0 ? new Node[] {r.item, r.sep} : new Node[] {r.item};
            }
            case Lit l -> new Node[0];
            case Lex l -> new Node[0];
            default -> children(n);
        };
    }

    /** The shortest text of a node (memoised on the node); {@code limit} bounds its length. */
    static byte[] minText(Node n, long limit) {
        byte[] t = n.minText;
        if (t != null) {
            return t;
        }
        if (n.minLen > limit) {
            throw new ConstraintBudgetException(keywordOf(n), "the shortest valid text is " + (n.minLen >= INF
                    ? "infinite" : n.minLen + " bytes") + " (at most " + limit + ")");
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream((int) Math.min(n.minLen, 1 << 16));
        writeMin(n, out, 0);
        t = out.toByteArray();
        n.minText = t;
        return t;
    }

    /**
     * The keyword behind a node's long shortest text: down the parts that make it long to a repetition
     * ({@code minItems}) or a counted lexeme ({@code minLength}).
     */
    static String keywordOf(Node n) {
        Node cur = n;
        for (int depth = 0; depth < 10_000; depth++) {
            switch (cur) {
                case Rep r -> {
                    if (r.item.minLen * 2 > r.minLen) {
                        cur = r.item;
                    } else {
                        return "minItems";
                    }
                }
                case Lex l -> {
                    return l.lexeme.counted ? "minLength" : "schema";
                }
                case Seq s -> {
                    Node big = null;
                    for (Node p : s.parts) {
                        if (big == null || p.minLen > big.minLen) {
                            big = p;
                        }
                    }
                    if (big == null || big.minLen * 2 <= s.minLen) {
                        return "properties";
                    }
                    cur = big;
                }
                case Alt a -> {
                    Node best = a.options[0];
                    for (Node o : a.options) {
                        if (o.minLen < best.minLen) {
                            best = o;
                        }
                    }
                    cur = best;
                }
                case Rule r -> cur = r.body;
                case Lit l -> {
                    return "schema";
                }
                case AnyOrder m -> {
                    return "required";
                }
            }
        }
        return "schema";
    }

    private static void writeMin(Node n, ByteArrayOutputStream out, int depth) {
        if (depth > 100_000) {
            throw new IllegalStateException("shortest text too deep");
        }
        byte[] memo = n.minText;
        if (memo != null) {
            out.writeBytes(memo);
            return;
        }
        switch (n) {
            case Lit l -> out.writeBytes(l.bytes);
            case Lex l -> {
                if (l.lexeme.counted) {
                    byte[] u = l.lexeme.completion(l.lexeme.start());
                    for (int i = 0; i < l.min; i++) {
                        out.writeBytes(u);
                    }
                } else {
                    out.writeBytes(l.lexeme.completion(l.lexeme.start()));
                }
            }
            case Seq s -> {
                for (Node p : s.parts) {
                    writeMin(p, out, depth + 1);
                }
            }
            case Alt a -> {
                Node best = a.options[0];
                for (Node o : a.options) {
                    if (o.minLen < best.minLen) {
                        best = o;
                    }
                }
                writeMin(best, out, depth + 1);
            }
            case Rule r -> writeMin(r.body, out, depth + 1);
            case Rep r -> {
                for (int i = 0; i < r.min; i++) {
                    if (i > 0 && r.sep != null) {
                        writeMin(r.sep, out, depth + 1);
                    }
                    writeMin(r.item, out, depth + 1);
                }
            }
            case AnyOrder m -> m.writeMin(x -> writeMin(x, out, depth + 1));
        }
    }
}
