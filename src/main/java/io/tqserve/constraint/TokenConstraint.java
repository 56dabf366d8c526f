package io.tqserve.constraint;

import io.tqserve.constraint.Grammar.Lex;
import io.tqserve.constraint.Parser.Config;
import java.util.ArrayList;
import java.util.List;

/**
 * A compiled constraint: a {@link Grammar} with its parser, over one model's {@link Vocabulary}. Immutable in
 * behaviour and thread-safe; shared by every sequence that uses the same schema. Compiling does no per-token
 * work: token masks are computed per step.
 *
 * <p><b>Masks.</b> The tokens a parser state allows are found by walking the vocabulary trie with the state's
 * configurations, pruning at the first rejected byte. A configuration inside a <i>wide</i> lexeme (a string's
 * contents, free text, whitespace: most of the vocabulary may follow) instead uses a cached
 * {@link LexemeMasks.Entry} for its lexeme state: the tokens that stay inside the lexeme (by the number of
 * units they add, so a {@code maxLength} near its bound masks exactly), and the trie nodes where the lexeme may
 * end and a byte of what follows comes next; only the subtries below those nodes are walked with the full parser.
 * Wide configurations in one lexeme state share their entry and walk their exits once, together. A state that
 * takes every plain string character builds its entry from the vocabulary's {@link StringSlice}.
 * Entries of the JSON string and whitespace lexemes and of undeclared member names are shared per vocabulary (they
 * do not depend on the schema; an undeclared name still spelling a declared one's prefix takes the shared entry of
 * its character state less the ends of the declared names, {@link LexemeMasks}), others are cached per constraint;
 * both caches are bounded in bytes.
 *
 * <p><b>Budget.</b> A token is allowed only if the document can still be finished within the tokens left after
 * it: an upper bound on the tokens to close from the state after the token ({@link Closing}) must fit. The state
 * keeps a closing plan (a spelling of the shortest closing text) whose next token is always allowed, so a
 * sequence can always finish within its budget; {@link #minTokens()} is the plan's length from the start.
 */
public final class TokenConstraint {
    private final Grammar grammar;
    private final Vocabulary vocabulary;
    private final Parser parser;
    private final Closing closing;
    private final LexemeMasks local;
    private final Config[] initial;
    private final int[] initialPlan;
    private final ConstraintLimits limits;

    public TokenConstraint(Grammar grammar, Vocabulary vocabulary) {
        this(grammar, vocabulary, ConstraintLimits.DEFAULT);
    }

    public TokenConstraint(Grammar grammar, Vocabulary vocabulary, ConstraintLimits limits) {
        this.grammar = grammar;
        this.vocabulary = vocabulary;
        this.parser = new Parser(limits);
        this.closing = new Closing(vocabulary, parser);
        this.local = new LexemeMasks(vocabulary, limits.maskCacheBytes());
        this.limits = limits;
        if (grammar.root.minLen >= Grammar.INF) {
            throw new UnsupportedSchemaException("schema", "no JSON document satisfies the schema");
        }
        this.initial = parser.start(grammar.root);
        this.initialPlan = closing.plan(initial);
        if (initialPlan == null) {
            throw new UnsupportedSchemaException("schema", "the model's vocabulary cannot spell a document valid "
                    + "against the schema");
        }
    }

    /** The fewest tokens that produce an accepted text from the start (the least max_tokens that can work). */
    public int minTokens() {
        return initialPlan.length;
    }

    public Vocabulary vocabulary() {
        return vocabulary;
    }

    public Grammar grammar() {
        return grammar;
    }

    /** Current memory estimate: the grammar, the parser's and budget's memos and this constraint's mask cache. */
    public long bytes() {
        return 64L * grammar.nodes() + parser.internBytes() + closing.bytes() + local.bytes() + 256;
    }

    /** Entries in this constraint's own lexeme-mask cache (for tests and metrics). */
    public int cachedMasks() {
        return local.size();
    }

    Parser parser() {
        return parser;
    }

    Closing closing() {
        return closing;
    }

    Config[] initial() {
        return initial;
    }

    int[] initialPlan() {
        return initialPlan;
    }

    ConstraintLimits limits() {
        return limits;
    }

    /** The keyword a budget failure names for these configurations: the first lexeme's (a pattern, a format). */
    private static String keyword(Config[] cs) {
        for (Config c : cs) {
            if (c.leaf instanceof Lex l && !"schema".equals(l.lexeme.keyword)) {
                return l.lexeme.keyword;
            }
        }
        return "schema";
    }

    private LexemeMasks cacheFor(Lexeme x) {
        return x == JsonLexemes.STRING_CHAR || x == JsonLexemes.WHITESPACE || x == UndeclaredNames.OUTSIDE
                ? vocabulary.sharedMasks : local;
    }

    /**
     * The tokens allowed after the configurations: accepted by the parser and leaving a closing bound within
     * {@code budget} tokens. EOS is not included (the caller decides it from {@link Parser#accepting}).
     *
     * @param exact walk the whole trie with the full parser (no lexeme cache): the reference for parity tests
     */
    long[] allowed(Config[] cs, int budget, boolean exact) {
        return allowed(cs, budget, exact, new MaskBudget(limits, limits.requestWork(), null));
    }

    /** As {@link #allowed(Config[], int, boolean)}, charging the work to {@code meter}. */
    long[] allowed(Config[] cs, int budget, boolean exact, MaskBudget meter) {
        long[] mask = new long[(vocabulary.size() + 63) >>> 6];
        if (budget < 0) {
            return mask;
        }
        MaskWork work = new MaskWork(parser, closing, meter);
        meter.keyword = keyword(cs);
        List<Config> rest = new ArrayList<>();
        java.util.Map<Group, List<Config>> groups = new java.util.LinkedHashMap<>();
        for (Config c : cs) {
            if (!exact && c.leaf instanceof Lex l && l.lexeme.wide) {
                long[] f = parser.follow(c.k);
                groups.computeIfAbsent(new Group(l.lexeme, l.min, l.max, c.pos, c.count, f[0], f[1], f[2], f[3]),
                        g -> new ArrayList<>())
                        .add(c);
            } else {
                rest.add(c);
            }
        }
        for (List<Config> g : groups.values()) {
            lexeme(g, (Lex) g.getFirst().leaf, mask, budget, work);
        }
        if (!rest.isEmpty()) {
            meter.keyword = keyword(rest.toArray(new Config[0]));
            walk(0, rest.toArray(new Config[0]), mask, budget, null, work);
        }
        return mask;
    }

    /**
     * Wide configurations in one lexeme state: the same lexeme and unit bounds, automaton state, unit count and
     * follow bytes. They differ only in what follows, so they share one entry and one inside mask, and their exits are
     * walked once with all their continuations together (the parser's state is a set: the walk from a union of
     * configurations allows what the walks from each allow, as the exact walk does).
     */
    private record Group(Lexeme lexeme, int min, int max, int pos, int count, long f0, long f1, long f2, long f3) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Group g && g.lexeme == lexeme && g.min == min && g.max == max && g.pos == pos
                    && g.count == count && g.f0 == f0 && g.f1 == f1 && g.f2 == f2 && g.f3 == f3;
        }

        @Override
        public int hashCode() {
            return ((System.identityHashCode(lexeme) * 31 + min * 17 + max) * 31 + pos) * 31 + count
                    + Long.hashCode(f0 ^ f1 * 31 ^ f2 * 17 ^ f3);
        }
    }

    private void lexeme(List<Config> group, Lex l, long[] mask, int budget, MaskWork work) {
        Lexeme x = l.lexeme;
        Config first = group.getFirst();
        work.budget.keyword = x.keyword;
        long[] follow = parser.follow(first.k);
        LexemeMasks.Entry e = cacheFor(x.sharedLexeme(first.pos)).entry(x, first.pos, follow, work.budget);
        work.add(e.exitNodes().length + 64L * group.size());
        int room = x.counted && l.max >= 0 ? l.max - first.count : Integer.MAX_VALUE;
        int deficit = x.counted ? Math.max(0, l.min - first.count) : 0;
        long leafBound = (long) closing.maxCompletion(x) + (deficit == 0 ? 0 : closing.units(x, deficit));
        boolean loose = false;
        for (Config c : group) {
            loose |= leafBound + closing.cont(c.k) <= budget;
        }
        if (loose) { // every inside token fits after one of them
            e.orInside(mask, room);
        } else {
            for (Config c : group) {
                inside(c, l, e, room, mask, budget, work);
            }
        }
        List<Config[]> afters = null;
        for (int i = 0; i < e.exitNodes().length; i++) {
            int total = first.count + e.exitUnits()[i];
            if (x.counted && (total < l.min || l.max >= 0 && total > l.max)) {
                continue;
            }
            if (afters == null) {
                afters = resumed(group);
            }
            for (Config[] after : afters) {
                walk(e.exitNodes()[i], after, mask, budget, follow, work);
            }
        }
    }

    /**
     * What the group's configurations resume with once their lexeme ends: together (without repeats), or each apart
     * when together they would be more configurations than the parser keeps alive.
     */
    private List<Config[]> resumed(List<Config> group) {
        if (group.size() == 1) {
            return java.util.Collections.singletonList(parser.resumed(group.getFirst().k));
        }
        java.util.LinkedHashSet<Config> all = new java.util.LinkedHashSet<>();
        for (Config c : group) {
            java.util.Collections.addAll(all, parser.resumed(c.k));
        }
        if (all.size() <= limits.maxConfigurations()) {
            return java.util.Collections.singletonList(all.toArray(new Config[0]));
        }
        List<Config[]> apart = new ArrayList<>();
        for (Config c : group) {
            apart.add(parser.resumed(c.k));
        }
        return apart;
    }

    /** Tight budget: each inside token of the entry checked against its own closing bound after {@code c}. */
    private void inside(Config c, Lex l, LexemeMasks.Entry e, int room, long[] mask, int budget, MaskWork work) {
        Lexeme x = l.lexeme;
        int cont = closing.cont(c.k);
        long[] inside = new long[mask.length];
        e.orInside(inside, room);
        for (int w = 0; w < inside.length; w++) {
            long bits = inside[w];
            while (bits != 0) {
                int t = (w << 6) + Long.numberOfTrailingZeros(bits);
                bits &= bits - 1;
                byte[] b = vocabulary.bytes(t);
                int s = c.pos;
                int n = c.count;
                for (int i = 0; i < b.length && s >= 0; i++) {
                    if (x.counted && s == x.start()) {
                        n = l.max < 0 ? Math.min(n + 1, Math.max(l.min, 1)) : n + 1;
                    }
                    s = x.step(s, b[i] & 0xFF);
                }
                work.add(b.length);
                if (s < 0) {
                    continue;
                }
                long leaf = x.counted && s == x.start() ? 0 : closing.completion(x, s);
                int d = x.counted ? Math.max(0, l.min - n) : 0;
                if (d > 0) {
                    leaf += closing.units(x, d);
                }
                if (leaf + cont <= budget) {
                    mask[w] |= 1L << t;
                }
            }
        }
    }

    /**
     * Depth first over the trie below {@code root} with the parser: a child is visited when some configuration
     * takes its byte; tokens at visited nodes (not the root) are allowed when their closing bound fits.
     */
    private void walk(int root, Config[] start, long[] mask, int budget, long[] firstOnly, MaskWork work) {
        Vocabulary v = vocabulary;
        int[] nodeStack = work.nodeStack;
        Config[][] cfgStack = work.cfgStack;
        nodeStack[0] = root;
        cfgStack[0] = start;
        int sp = 1;
        long[] fb = new long[4];
        while (sp > 0) {
            int n = nodeStack[--sp];
            Config[] cs = cfgStack[sp];
            cfgStack[sp] = null;
            work.add(1 + cs.length);
            if (n != root && v.firstToken[n] >= 0 && work.bound(cs) <= budget) {
                for (int t = v.firstToken[n]; t >= 0; t = v.nextToken[t]) {
                    mask[t >>> 6] |= 1L << t;
                }
            }
            int lo = v.childStart[n];
            int hi = v.childStart[n + 1];
            if (lo == hi) {
                continue;
            }
            long[] f = work.first(cs);
            fb[0] = f[0];
            fb[1] = f[1];
            fb[2] = f[2];
            fb[3] = f[3];
            if (n == root && firstOnly != null) {
                for (int i = 0; i < 4; i++) {
                    fb[i] &= firstOnly[i];
                }
            }
            int pop = Long.bitCount(fb[0]) + Long.bitCount(fb[1]) + Long.bitCount(fb[2]) + Long.bitCount(fb[3]);
            if (pop == 0) {
                continue;
            }
            if (sp + Math.min(pop, hi - lo) >= nodeStack.length) {
                int size = Math.max(nodeStack.length * 2, sp + 257);
                nodeStack = java.util.Arrays.copyOf(nodeStack, size);
                cfgStack = java.util.Arrays.copyOf(cfgStack, size);
                work.nodeStack = nodeStack;
                work.cfgStack = cfgStack;
            }
            if (pop * 6 < hi - lo) {
                for (int w = 0; w < 4; w++) {
                    long bits = fb[w];
                    while (bits != 0) {
                        int b = (w << 6) + Long.numberOfTrailingZeros(bits);
                        bits &= bits - 1;
                        int ch = v.child(n, b);
                        if (ch >= 0) {
                            Config[] next = work.step(cs, b);
                            if (next.length > 0) {
                                nodeStack[sp] = ch;
                                cfgStack[sp++] = next;
                            }
                        }
                    }
                }
            } else {
                for (int ch = lo; ch < hi; ch++) {
                    int b = v.label[ch];
                    if ((fb[b >>> 6] & (1L << b)) != 0) {
                        Config[] next = work.step(cs, b);
                        if (next.length > 0) {
                            nodeStack[sp] = ch;
                            cfgStack[sp++] = next;
                        }
                    }
                }
            }
        }
    }
}
