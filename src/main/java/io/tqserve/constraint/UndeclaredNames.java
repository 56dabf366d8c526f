package io.tqserve.constraint;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The contents of a JSON string (between the quotes) naming a member that an object schema does not declare: any
 * name but the declared ones, so an undeclared member is checked against {@code additionalProperties} and never
 * stands in for a declared one. Names are spelled one way only, the way {@link JsonLexemes#quote} (and Python's
 * {@code json.dumps}) writes them: characters raw as UTF-8 (any plane), {@code \"}, {@code \\}, {@code \b},
 * {@code \f}, {@code \n}, {@code \r}, {@code \t}, and {@code \}{@code u00xx} (lower-case hex) for the other control
 * characters. With one spelling per name, leaving out the declared names' spellings leaves out exactly the declared
 * names (a {@code \}{@code u0061} for {@code a} cannot slip a declared name past the check).
 *
 * <p>States: the nodes of a trie of the declared names' spellings (node 0, the start: nothing read), then the
 * states of the canonical character automaton once the name has left the trie. A trie node knows the character
 * automaton's state its path leads to, so a name that leaves the trie in the middle of a character goes on in the
 * right state. Written by hand: a regex library would build the complement of the names by determinizing a union,
 * and the trie is the minimal automaton already. Memory is linear in the names' total bytes.
 */
final class UndeclaredNames extends Lexeme {
    // the canonical character automaton (free states): 0 between characters, 1..7 inside a UTF-8 sequence,
    // 8 after a backslash, 9..13 inside a backslash-u escape of a control character
    private static final int FREE = 14;
    private static final int[][] CANON = canon();
    /**
     * The names once they have left the trie, one lexeme for all objects: every object's undeclared names go on
     * there alike, so their cached masks are computed once, not once per object.
     */
    static final Lexeme OUTSIDE = outside();

    private final int[] childStart;
    private final byte[] label;
    private final boolean[] end;
    private final byte[] charState;
    private final int trie;

    private UndeclaredNames(int[] childStart, byte[] label, boolean[] end, byte[] charState) {
        super("undeclared member name", false, true);
        this.childStart = childStart;
        this.label = label;
        this.end = end;
        this.charState = charState;
        this.trie = end.length;
        this.keyword = "additionalProperties";
    }

    /**
     * A member the schema does not declare, {@code "name": value} with trailing whitespace, the name any but
     * {@code declared} and the value {@code value} (additionalProperties' schema, or any value); null when the
     * declared names' spellings pass {@code limits.maxEnumBytes()} (the object then takes its declared members
     * only: a subset of its documents, never a document it rejects).
     */
    static Grammar.Node member(List<String> declared, Grammar.Node value, Grammar.Node ws, ConstraintLimits limits) {
        long total = 0;
        for (String s : declared) {
            total += spelling(s).length;
        }
        if (total > limits.maxEnumBytes() || value == Grammar.fail()) {
            return null;
        }
        Grammar.Node quote = Grammar.lit("\"");
        return Grammar.seq(quote, new Grammar.Lex(except(declared), 0, -1), quote, ws, Grammar.lit(":"), ws, value, ws);
    }

    /** Any member name but {@code declared}. */
    static UndeclaredNames except(List<String> declared) {
        List<byte[]> names = new ArrayList<>();
        for (String s : declared) {
            byte[] b = spelling(s);
            if (canonical(b)) { // a name with a lone surrogate has no spelling here: nothing to leave out
                names.add(b);
            }
        }
        names.sort(Arrays::compareUnsigned);
        // a trie numbered breadth first with each node's children consecutive and sorted (as Lexeme.Strings)
        List<Integer> starts = new ArrayList<>();
        List<Byte> labels = new ArrayList<>();
        List<Boolean> ends = new ArrayList<>();
        List<Integer> states = new ArrayList<>();
        labels.add((byte) 0);
        ends.add(false);
        states.add(0);
        int[] nodeOf = new int[names.size()];
        List<int[]> childRange = new ArrayList<>();
        childRange.add(new int[] {-1, -1});
        int maxLen = 0;
        for (byte[] b : names) {
            maxLen = Math.max(maxLen, b.length);
        }
        for (int d = 0; d < maxLen; d++) {
            int prevParent = -1;
            int prevNode = -1;
            byte prevByte = 0;
            for (int i = 0; i < names.size(); i++) {
                byte[] s = names.get(i);
                if (s.length <= d) {
                    continue;
                }
                int parent = nodeOf[i];
                int node;
                if (parent == prevParent && s[d] == prevByte) {
                    node = prevNode;
                } else {
                    node = labels.size();
                    labels.add(s[d]);
                    ends.add(false);
                    states.add(CANON[states.get(parent)][s[d] & 0xFF]);
                    childRange.add(new int[] {-1, -1});
                    int[] r = childRange.get(parent);
                    if (r[0] < 0) {
                        r[0] = node;
                    }
                    r[1] = node + 1;
                }
                if (s.length == d + 1) {
                    ends.set(node, true);
                }
                prevParent = parent;
                prevByte = s[d];
                prevNode = node;
                nodeOf[i] = node;
            }
        }
        for (byte[] b : names) {
            if (b.length == 0) {
                ends.set(0, true);
            }
        }
        int n = labels.size();
        int[] childStart = new int[2 * n];
        byte[] label = new byte[n];
        boolean[] end = new boolean[n];
        byte[] charState = new byte[n];
        for (int i = 0; i < n; i++) {
            int[] r = childRange.get(i);
            childStart[2 * i] = r[0] < 0 ? 0 : r[0];
            childStart[2 * i + 1] = r[0] < 0 ? 0 : r[1];
            label[i] = labels.get(i);
            end[i] = ends.get(i);
            charState[i] = (byte) (int) states.get(i);
        }
        return new UndeclaredNames(childStart, label, end, charState);
    }

    /** The bytes of a name between its quotes, as {@link JsonLexemes#quote} writes it. */
    static byte[] spelling(String name) {
        String q = JsonLexemes.quote(name);
        return q.substring(1, q.length() - 1).getBytes(StandardCharsets.UTF_8);
    }

    private static boolean canonical(byte[] b) {
        int s = 0;
        for (byte x : b) {
            s = CANON[s][x & 0xFF];
            if (s < 0) {
                return false;
            }
        }
        return s == 0;
    }

    /** Whether {@code state} is a node of the declared names' trie (the name has not left it). */
    boolean inTrie(int state) {
        return state < trie;
    }

    /** The state of {@link #OUTSIDE} that reads on from trie node {@code state} byte for byte as this lexeme does. */
    int outsideState(int state) {
        return charState[state];
    }

    /**
     * The vocabulary-trie nodes whose path spells, from trie node {@code state}, the rest of a declared name: the
     * only places where {@link #OUTSIDE} (from {@link #outsideState}) may end and this lexeme may not. Elsewhere the
     * two agree: a trie child's character state is the character automaton's step from its parent's, so the same
     * bytes live, and outside the trie's end nodes the same states accept. Cost: the trie below {@code state},
     * pruned where the vocabulary has no token going on.
     */
    int[] declaredEnds(int state, Vocabulary v) {
        int[] out = new int[4];
        int n = 0;
        int[] stack = new int[16];
        int sp = 0;
        stack[sp++] = state;
        stack[sp++] = 0; // the vocabulary trie's root
        while (sp > 0) {
            int vn = stack[--sp];
            int s = stack[--sp];
            if (end[s]) {
                if (n == out.length) {
                    out = Arrays.copyOf(out, 2 * n);
                }
                out[n++] = vn;
            }
            for (int ch = childStart[2 * s]; ch < childStart[2 * s + 1]; ch++) {
                int vc = v.child(vn, label[ch] & 0xFF);
                if (vc >= 0) {
                    if (sp + 2 > stack.length) {
                        stack = Arrays.copyOf(stack, 2 * stack.length);
                    }
                    stack[sp++] = ch;
                    stack[sp++] = vc;
                }
            }
        }
        return Arrays.copyOf(out, n);
    }

    @Override
    int start() {
        return 0;
    }

    @Override
    int step(int state, int b) {
        if (state >= trie) {
            int t = CANON[state - trie][b];
            return t < 0 ? DEAD : trie + t;
        }
        int lo = childStart[2 * state];
        int hi = childStart[2 * state + 1] - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            int l = label[mid] & 0xFF;
            if (l < b) {
                lo = mid + 1;
            } else if (l > b) {
                hi = mid - 1;
            } else {
                return mid;
            }
        }
        int t = CANON[charState[state]][b];
        return t < 0 ? DEAD : trie + t;
    }

    /** As {@link #step} for every byte, the children's labels walked in order beside the bytes (no search). */
    @Override
    int targets(int state, int[] out) {
        boolean free = state >= trie;
        int[] row = CANON[free ? state - trie : charState[state]];
        int c = free ? 0 : childStart[2 * state];
        int end = free ? 0 : childStart[2 * state + 1];
        int k = 0;
        for (int b = 0; b < 256; b++) {
            if (c < end && (label[c] & 0xFF) == b) {
                out[k++] = c++;
            } else if (row[b] >= 0) {
                out[k++] = trie + row[b];
            }
        }
        return k;
    }

    @Override
    boolean accepting(int state) {
        return state >= trie ? state == trie : charState[state] == 0 && !end[state];
    }

    @Override
    int states() {
        return trie + FREE;
    }

    @Override
    long bytes() {
        return 10L * trie + 64;
    }

    @Override
    Lexeme sharedLexeme(int state) {
        return state >= trie ? OUTSIDE : this;
    }

    @Override
    int sharedState(int state) {
        return state >= trie ? state - trie : state;
    }

    private static Lexeme outside() {
        boolean[] accept = new boolean[FREE];
        accept[0] = true;
        Lexeme x = Lexeme.table("undeclared member name", false, true, FREE, 0, accept, (s, b) -> CANON[s][b]);
        x.keyword = "additionalProperties";
        return x;
    }

    private static boolean hex(int b) {
        return b >= '0' && b <= '9' || b >= 'a' && b <= 'f';
    }

    private static int[][] canon() {
        int[][] t = new int[FREE][256];
        for (int[] row : t) {
            Arrays.fill(row, -1);
        }
        for (int b = 0x20; b <= 0x7F; b++) {
            t[0][b] = b == '"' ? -1 : b == '\\' ? 8 : 0;
        }
        // UTF-8 as the string lexeme reads it: 1..3 continuation bytes left (states 1..3), or a constrained
        // second byte (4: after E0, 5: after ED, 6: after F0, 7: after F4)
        for (int b = 0xC2; b <= 0xDF; b++) {
            t[0][b] = 1;
        }
        t[0][0xE0] = 4;
        for (int b = 0xE1; b <= 0xEF; b++) {
            t[0][b] = b == 0xED ? 5 : 2;
        }
        t[0][0xF0] = 6;
        for (int b = 0xF1; b <= 0xF3; b++) {
            t[0][b] = 3;
        }
        t[0][0xF4] = 7;
        for (int b = 0x80; b <= 0xBF; b++) {
            t[1][b] = 0;
            t[2][b] = 1;
            t[3][b] = 2;
            t[4][b] = b >= 0xA0 ? 1 : -1;
            t[5][b] = b <= 0x9F ? 1 : -1;
            t[6][b] = b >= 0x90 ? 2 : -1;
            t[7][b] = b <= 0x8F ? 2 : -1;
        }
        for (char c : "\"\\bfnrt".toCharArray()) {
            t[8][c] = 0;
        }
        t[8]['u'] = 9;
        t[9]['0'] = 10;
        t[10]['0'] = 11;
        t[11]['0'] = 12; // U+0000..U+000F but the ones with a short escape: 08 09 0a 0c 0d
        t[11]['1'] = 13; // U+0010..U+001F
        for (int b = 0; b < 256; b++) {
            if (hex(b)) {
                t[12][b] = "89acd".indexOf(b) >= 0 ? -1 : 0;
                t[13][b] = 0;
            }
        }
        return t;
    }
}
