package io.tqserve.constraint;

import io.tqserve.constraint.Grammar.Lex;
import io.tqserve.constraint.Grammar.Lit;
import io.tqserve.constraint.Grammar.Node;
import io.tqserve.constraint.Grammar.Rep;
import io.tqserve.constraint.Grammar.Seq;
import io.tqserve.constraint.Parser.Config;
import io.tqserve.constraint.Parser.Cont;
import java.io.ByteArrayOutputStream;
import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The completion budget in real tokens. The closing text of a configuration is the rest of its leaf (the rest of a
 * literal; a lexeme's shortest way to an end, plus the units its minimum still needs) followed by each
 * continuation's shortest remainder. Its token count is taken as the fewest tokens of the vocabulary that spell it
 * (a shortest path over the text's positions, walking the trie from each), summed per component: an upper bound
 * on the tokens needed to finish, since any spelling of a valid text is a valid token sequence. Components are
 * memoised per literal, lexeme state, sequence position, repetition deficit and (interned) continuation.
 */
final class Closing {
    static final int UNREACHABLE = Integer.MAX_VALUE / 4;

    private final Vocabulary v;
    /** Whether every byte is a token of its own (byte-level BPE): then a text of n bytes takes at most n tokens. */
    private final boolean allSingleBytes;
    private final Parser parser;
    private final long maxBytes;
    private final ConcurrentHashMap<Node, int[]> suffixTokens = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Node, Integer> nodeTokens = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Object, int[]> periodic = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Lexeme, int[]> completionTokens = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<Lexeme, Integer> maxCompletion = new ConcurrentHashMap<>();

    Closing(Vocabulary v, Parser parser) {
        this.v = v;
        this.allSingleBytes = java.util.stream.IntStream.range(0, 256).allMatch(v::hasSingleByte);
        this.parser = parser;
        this.maxBytes = parser.limits().maxClosingBytes();
    }

    long bytes() {
        long b = 0;
        for (int[] a : suffixTokens.values()) {
            b += 16 + 4L * a.length;
        }
        for (int[] a : periodic.values()) {
            b += 16 + 4L * a.length;
        }
        return b + 64L * completionTokens.size();
    }

    /** Fewest tokens spelling each suffix {@code text[i..]} (index i), {@link #UNREACHABLE} if none does. */
    int[] suffixCounts(byte[] text) {
        int n = text.length;
        int[] best = new int[n + 1];
        Arrays.fill(best, UNREACHABLE);
        best[n] = 0;
        for (int i = n - 1; i >= 0; i--) {
            int node = 0;
            int m = UNREACHABLE;
            for (int j = i; j < n; j++) {
                node = v.child(node, text[j] & 0xFF);
                if (node < 0) {
                    break;
                }
                if (v.firstToken[node] >= 0 && best[j + 1] < UNREACHABLE) {
                    m = Math.min(m, best[j + 1] + 1);
                }
            }
            best[i] = m;
        }
        return best;
    }

    /** Fewest tokens spelling each prefix {@code text[..j]} (index j). */
    int[] prefixCounts(byte[] text) {
        int n = text.length;
        int[] best = new int[n + 1];
        Arrays.fill(best, UNREACHABLE);
        best[0] = 0;
        for (int i = 0; i < n; i++) {
            if (best[i] >= UNREACHABLE) {
                continue;
            }
            int node = 0;
            for (int j = i; j < n; j++) {
                node = v.child(node, text[j] & 0xFF);
                if (node < 0) {
                    break;
                }
                if (v.firstToken[node] >= 0 && best[j + 1] > best[i] + 1) {
                    best[j + 1] = best[i] + 1;
                }
            }
        }
        return best;
    }

    /** A fewest-token spelling of {@code text}, or null if none. */
    int[] tokenize(byte[] text) {
        int n = text.length;
        int[] best = new int[n + 1];
        int[] tok = new int[n + 1];
        Arrays.fill(best, UNREACHABLE);
        best[n] = 0;
        for (int i = n - 1; i >= 0; i--) {
            int node = 0;
            for (int j = i; j < n; j++) {
                node = v.child(node, text[j] & 0xFF);
                if (node < 0) {
                    break;
                }
                if (v.firstToken[node] >= 0 && best[j + 1] < UNREACHABLE && best[j + 1] + 1 < best[i]) {
                    best[i] = best[j + 1] + 1;
                    tok[i] = v.firstToken[node];
                }
            }
        }
        if (best[0] >= UNREACHABLE) {
            return null;
        }
        int[] out = new int[best[0]];
        for (int i = 0, k = 0; i < n; k++) {
            out[k] = tok[i];
            i += v.bytes(tok[i]).length;
        }
        return out;
    }

    private static int add(int a, int b) {
        return a >= UNREACHABLE || b >= UNREACHABLE ? UNREACHABLE : Math.min(UNREACHABLE, a + b);
    }

    /** Upper bound on the tokens that finish a document from this configuration. */
    int bound(Config c) {
        return add(leaf(c), cont(c.k));
    }

    /** The least {@link #bound} over the configurations. */
    int bound(Config[] cs) {
        int m = UNREACHABLE;
        for (Config c : cs) {
            m = Math.min(m, bound(c));
        }
        return m;
    }

    int leaf(Config c) {
        return switch (c.leaf) {
            case null -> 0;
            case Lit l -> suffixTokens.computeIfAbsent(l, x -> suffixCounts(l.bytes))[c.pos];
            case Lex l -> {
                Lexeme x = l.lexeme;
                int comp = x.counted && c.pos == x.start() ? 0 : completion(x, c.pos);
                int deficit = x.counted ? Math.max(0, l.min - c.count) : 0;
                yield add(comp, deficit == 0 ? 0 : units(x, deficit));
            }
            default -> throw new IllegalStateException();
        };
    }

    /** Tokens of the lexeme's shortest completion from a state. */
    int completion(Lexeme x, int state) {
        int[] memo = completionTokens.computeIfAbsent(x, k -> {
            int[] a = new int[k.states()];
            Arrays.fill(a, -1);
            return a;
        });
        int r = memo[state];
        if (r < 0) {
            byte[] t = x.completion(state);
            r = t == null ? UNREACHABLE : suffixCounts(t)[0];
            memo[state] = r;
        }
        return r;
    }

    /** The most tokens any state of the lexeme needs to reach its end (or the end of its unit). */
    int maxCompletion(Lexeme x) {
        return maxCompletion.computeIfAbsent(x, k -> {
            if (k.states() > 64 && allSingleBytes) {
                // every byte is a token: a completion of n bytes takes at most n tokens; one backward search
                // instead of one completion per state (a pattern's automaton has up to max-lexeme-states)
                return k.maxDistance() + (k.counted ? 1 : 0);
            }
            int m = 0;
            for (int s = 0; s < k.states(); s++) {
                m = Math.max(m, completion(k, s));
            }
            return m;
        });
    }

    /** Tokens of {@code n} shortest units of a counted lexeme. */
    int units(Lexeme x, int n) {
        return periodicTokens(x, x.completion(x.start()), n);
    }

    /** Tokens of {@code period} repeated {@code n} times (forward shortest paths, grown on demand). */
    private int periodicTokens(Object key, byte[] period, int n) {
        if (period == null) {
            return UNREACHABLE;
        }
        int[] memo = periodic.get(key);
        if (memo == null || memo.length <= n) {
            int want = Math.max(n + 1, memo == null ? 8 : Math.min(memo.length * 2, Integer.MAX_VALUE / 2));
            if ((long) want * period.length > maxBytes) {
                want = n + 1;
                if ((long) want * period.length > maxBytes) {
                    throw new ConstraintBudgetException(key instanceof Rep ? "minItems" : "minLength",
                            "the shortest completion is " + (long) n * period.length + " bytes (at most " + maxBytes
                                    + ")");
                }
            }
            byte[] text = new byte[want * period.length];
            for (int i = 0; i < want; i++) {
                System.arraycopy(period, 0, text, i * period.length, period.length);
            }
            int[] pre = prefixCounts(text);
            memo = new int[want];
            for (int i = 0; i < want; i++) {
                // the running maximum: still an upper bound for each count, and monotone in the count (the
                // aggregate check of a lexeme's inside tokens relies on it)
                memo[i] = Math.max(pre[i * period.length], i == 0 ? 0 : memo[i - 1]);
            }
            periodic.put(key, memo);
        }
        return memo[n];
    }

    /** Tokens of the shortest remainder of each continuation down the stack (memoised on interned continuations). */
    int cont(Cont k) {
        if (k == null) {
            return 0;
        }
        int t = k.tokens;
        if (t >= 0) {
            return t;
        }
        // fill from the bottom of the stack without recursion (stacks of free JSON can be deep)
        int depth = 0;
        for (Cont c = k; c != null && c.tokens < 0; c = c.next) {
            depth++;
        }
        Cont[] chain = new Cont[depth];
        Cont c = k;
        for (int i = 0; i < depth; i++, c = c.next) {
            chain[i] = c;
        }
        int below = c == null ? 0 : c.tokens;
        for (int i = depth - 1; i >= 0; i--) {
            below = add(frame(chain[i]), below);
            chain[i].tokens = below;
        }
        return below;
    }

    private int frame(Cont k) {
        return switch (k.node) {
            case Seq s -> suffixTokens.computeIfAbsent(s, x -> seqCounts(s))[k.pos];
            case Rep r -> {
                if (k.pos == Parser.AFTER_ITEM) {
                    int d = Math.max(0, r.min - k.count);
                    yield d == 0 ? 0 : periodicTokens(r, period(r), d);
                }
                int d = Math.max(0, r.min - k.count - 1);
                int item = nodeTokens.computeIfAbsent(r.item, x -> suffixCounts(Grammar.minText(x, maxBytes))[0]);
                yield add(item, d == 0 ? 0 : periodicTokens(r, period(r), d));
            }
            case AnyOrder m -> suffixCounts(m.closing(k.pos, k.count, maxBytes))[0];
            default -> throw new IllegalStateException();
        };
    }

    private byte[] period(Rep r) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        if (r.sep != null) {
            o.writeBytes(Grammar.minText(r.sep, maxBytes));
        }
        o.writeBytes(Grammar.minText(r.item, maxBytes));
        return o.toByteArray();
    }

    /** Per part index i: tokens of the shortest text of parts i.. (read at the parts' boundaries). */
    private int[] seqCounts(Seq s) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        int[] at = new int[s.parts.length + 1];
        for (int i = 0; i < s.parts.length; i++) {
            at[i] = o.size();
            o.writeBytes(Grammar.minText(s.parts[i], maxBytes));
            if (o.size() > maxBytes) {
                throw new ConstraintBudgetException(Grammar.keywordOf(s), "the shortest completion exceeds "
                        + maxBytes + " bytes");
            }
        }
        at[s.parts.length] = o.size();
        int[] suf = suffixCounts(o.toByteArray());
        int[] out = new int[s.parts.length + 1];
        for (int i = 0; i <= s.parts.length; i++) {
            out[i] = suf[at[i]];
        }
        return out;
    }

    /** The closing text of a configuration (for a closing plan). */
    byte[] text(Config c) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        switch (c.leaf) {
            case null -> {
            }
            case Lit l -> o.write(l.bytes, c.pos, l.bytes.length - c.pos);
            case Lex l -> {
                Lexeme x = l.lexeme;
                if (!(x.counted && c.pos == x.start())) {
                    o.writeBytes(x.completion(c.pos));
                }
                if (x.counted) {
                    byte[] u = x.completion(x.start());
                    for (int i = c.count; i < l.min; i++) {
                        o.writeBytes(u);
                    }
                }
            }
            default -> throw new IllegalStateException();
        }
        for (Cont k = c.k; k != null; k = k.next) {
            switch (k.node) {
                case Seq s -> {
                    for (int i = k.pos; i < s.parts.length; i++) {
                        o.writeBytes(Grammar.minText(s.parts[i], maxBytes));
                    }
                }
                case Rep r -> {
                    int d;
                    if (k.pos == Parser.AFTER_SEP) {
                        o.writeBytes(Grammar.minText(r.item, maxBytes));
                        d = Math.max(0, r.min - k.count - 1);
                    } else {
                        d = Math.max(0, r.min - k.count);
                    }
                    byte[] p = period(r);
                    for (int i = 0; i < d; i++) {
                        o.writeBytes(p);
                    }
                }
                case AnyOrder m -> o.writeBytes(m.closing(k.pos, k.count, maxBytes));
                default -> throw new IllegalStateException();
            }
            if (o.size() > maxBytes) {
                throw new ConstraintBudgetException(Grammar.keywordOf(k.node), "the shortest completion exceeds " + maxBytes
                        + " bytes");
            }
        }
        return o.toByteArray();
    }

    /** A closing plan: the fewest-token spelling of the best configuration's closing text (null if none). */
    int[] plan(Config[] cs) {
        Config best = null;
        int b = UNREACHABLE;
        for (Config c : cs) {
            int x = bound(c);
            if (x < b) {
                b = x;
                best = c;
            }
        }
        if (best == null) {
            return null;
        }
        return tokenize(text(best));
    }

    Parser parser() {
        return parser;
    }
}
