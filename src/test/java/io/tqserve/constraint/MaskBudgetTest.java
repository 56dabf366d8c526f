package io.tqserve.constraint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.tqserve.constraint.Parser.Config;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CancellationException;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

/**
 * The mask work of {@code pattern} strings is charged and bounded. The shape is MaskBench's {@code
 * Github_easy---o10009} (a 12-character string with the unanchored pattern {@code [0-9a-fA-F]+}) and {@code
 * o12617} (an unanchored timestamp pattern), which with Qwen3's 151k-token vocabulary once spun for more than 10 s
 * of CPU per mask: nearly every token stays inside such a string, and the mask walked the whole vocabulary trie with
 * the parser, unmetered. Here a synthetic vocabulary of the same size and shape (every byte, then 150,000 distinct
 * pseudo-random ASCII pieces of 2 to 9 bytes, seeded) stands in for the real one, which is 11 MB.
 */
class MaskBudgetTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String HEX = """
            {"type": "object", "properties": {"clientId": {"type": "string", "minLength": 12, "maxLength": 12,
             "pattern": "[0-9a-fA-F]+"}}, "required": ["clientId"], "additionalProperties": false}""";
    static final String TIMESTAMP = """
            {"type": "object", "properties": {"created": {"type": "string",
             "pattern": "\\\\d{4}-\\\\d{2}-\\\\d{2}T\\\\d{2}:\\\\d{2}:\\\\d{2}.\\\\d{6}"}},
             "required": ["created"], "additionalProperties": false}""";
    static final String ALPHABET = "0123456789abcdefABCDEFxyzXYZ-:T. _\"{},";
    private static Vocabulary large;
    private static int eos;

    /** Every byte, then {@code pieces} distinct pseudo-random pieces, then one empty id (EOS). */
    static synchronized Vocabulary large() {
        if (large == null) {
            large = synthetic(150_000, 11);
            eos = large.size() - 1;
        }
        return large;
    }

    static Vocabulary synthetic(int pieces, long seed) {
        LinkedHashSet<String> set = new LinkedHashSet<>();
        SplittableRandom r = new SplittableRandom(seed);
        while (set.size() < pieces) {
            int n = r.nextInt(2, 10);
            StringBuilder sb = new StringBuilder(n);
            for (int i = 0; i < n; i++) {
                sb.append(ALPHABET.charAt(r.nextInt(ALPHABET.length())));
            }
            set.add(sb.toString());
        }
        List<byte[]> t = new ArrayList<>();
        for (int b = 0; b < 256; b++) {
            t.add(new byte[] {(byte) b});
        }
        for (String s : set) {
            t.add(s.getBytes(StandardCharsets.US_ASCII));
        }
        t.add(null);
        return new Vocabulary(t.toArray(byte[][]::new));
    }

    static TokenConstraint compile(String schema, ConstraintLimits limits) {
        return compile(schema, limits, large());
    }

    static TokenConstraint compile(String schema, ConstraintLimits limits, Vocabulary v) {
        return new TokenConstraint(SchemaCompiler.compile(JSON.readValue(schema, Map.class), limits), v, limits);
    }

    /** Follows {@code text} byte by byte (single-byte tokens). */
    static void advance(ConstraintState st, String text) {
        for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
            st.advance(b & 0xFF);
        }
    }

    @Test
    void aPatternMaskBeyondItsWorkBudgetIsRefusedNamingPattern() {
        ConstraintLimits tight = ConstraintLimits.DEFAULT.withMaskBudget(20_000, Long.MAX_VALUE / 2, 60_000);
        TokenConstraint c = compile(HEX, tight);
        ConstraintState st = new ConstraintState(c, new int[] {eos}, -1);
        st.allowed(100); // before the string: a few literal bytes
        advance(st, "{\"clientId\": \"");
        assertThatThrownBy(() -> st.allowed(100)).isInstanceOf(ConstraintBudgetException.class)
                .hasMessageContaining("a token mask needed more than 20000 work units")
                .extracting(e -> ((ConstraintBudgetException) e).keyword()).isEqualTo("pattern");
        // charged as it went: stopped within one check interval of the bound
        assertThat(st.workUsed()).isBetween(20_000L, 20_000L + MaskBudget.CHECK_EVERY + 512);
    }

    @Test
    void theMasksOfARequestShareOneBudget() {
        // one mask inside the string walks the vocabulary once per new lexeme state (about 0.4 M units here); the
        // request may take two such walks, not twelve
        TokenConstraint probe = compile(HEX, ConstraintLimits.DEFAULT);
        ConstraintState p = new ConstraintState(probe, new int[] {eos}, -1);
        advance(p, "{\"clientId\": \"");
        long before = p.workUsed();
        p.allowed(100);
        long walk = p.workUsed() - before;
        assertThat(walk).isGreaterThan(100_000L);

        ConstraintLimits limits = ConstraintLimits.DEFAULT.withMaskBudget(ConstraintLimits.DEFAULT_MASK_WORK,
                before + 2 * walk + walk / 2, 60_000);
        TokenConstraint c = compile(HEX, limits);
        ConstraintState st = new ConstraintState(c, new int[] {eos}, -1);
        advance(st, "{\"clientId\": \"");
        assertThatThrownBy(() -> {
            for (char ch : "0123456789ab".toCharArray()) {
                st.allowed(100);
                advance(st, String.valueOf(ch));
            }
        }).isInstanceOf(ConstraintBudgetException.class)
                .hasMessageContaining("the token masks of this request needed more than")
                .extracting(e -> ((ConstraintBudgetException) e).keyword()).isEqualTo("pattern");
    }

    @Test
    void aCancelledRequestStopsItsMaskMidWalk() {
        TokenConstraint c = compile(HEX, ConstraintLimits.DEFAULT);
        boolean[] cancelled = {false};
        ConstraintState st = new ConstraintState(c, new int[] {eos}, -1, () -> cancelled[0]);
        advance(st, "{\"clientId\": \"");
        cancelled[0] = true;
        assertThatThrownBy(() -> st.allowed(100)).isInstanceOf(CancellationException.class);
        assertThat(st.workUsed()).isLessThanOrEqualTo(MaskBudget.CHECK_EVERY + 512);
    }

    @Test
    void unanchoredPatternsMaskExactlyAndAcceptTheirInstances() {
        Vocabulary v = synthetic(20_000, 5); // the reference walk is the slow one: a smaller vocabulary of the shape
        for (String[] s : new String[][] {{HEX, "{\"clientId\": \"0123456789ab\"}", "{\"clientId\": \"0123456789abz\"}"},
                {TIMESTAMP, "{\"created\": \"x2022-01-01T12:00:00.000000\"}",
                        "{\"created\": \"2022-01-01T12:00:00\"}"}}) {
            TokenConstraint c = compile(s[0], ConstraintLimits.DEFAULT, v);
            assertThat(runs(c, s[1])).as(s[1]).isTrue();
            assertThat(runs(c, s[2])).as(s[2]).isFalse();
        }
    }

    @Test
    void completionsFromOneBackwardSearchEqualAForwardSearchPerState() {
        Lexeme pattern = JsonLexemes.of("p", new dk.brics.automaton.RegExp("[0-9a-f]{3}(x|yz)*q|[a-c]+").toAutomaton(),
                1000, "pattern");
        for (Lexeme x : List.of(pattern, JsonLexemes.STRING_CHAR, JsonLexemes.WHITESPACE)) {
            for (int s = 0; s < x.states(); s++) {
                assertThat(x.completion(s)).as("%s state %d", x, s)
                        .isEqualTo(forward(x, s, x.counted && s == x.start()));
            }
        }
        assertThat(pattern.maxDistance()).isEqualTo(3); // "00q" after a first digit
    }

    /** The lexicographically smallest shortest path to an accepting state, one breadth-first search forward. */
    private static byte[] forward(Lexeme x, int from, boolean unit) {
        if (!unit && x.accepting(from)) {
            return new byte[0];
        }
        java.util.Map<Integer, byte[]> seen = new java.util.HashMap<>();
        java.util.ArrayDeque<Integer> queue = new java.util.ArrayDeque<>();
        for (int b = 0; b < 256; b++) {
            int t = x.step(from, b);
            if (t >= 0 && !seen.containsKey(t)) {
                seen.put(t, new byte[] {(byte) b});
                queue.add(t);
            }
        }
        while (!queue.isEmpty()) {
            int s = queue.poll();
            byte[] path = seen.get(s);
            if (x.accepting(s)) {
                return path;
            }
            for (int b = 0; b < 256; b++) {
                int t = x.step(s, b);
                if (t >= 0 && !seen.containsKey(t)) {
                    byte[] p = java.util.Arrays.copyOf(path, path.length + 1);
                    p[path.length] = (byte) b;
                    seen.put(t, p);
                    queue.add(t);
                }
            }
        }
        return null;
    }

    /**
     * Follows {@code doc} greedily by the longest allowed token, checking each mask against the reference walk
     * (the whole trie with the parser): whether the document is accepted.
     */
    private static boolean runs(TokenConstraint c, String doc) {
        byte[] b = doc.getBytes(StandardCharsets.UTF_8);
        Vocabulary v = c.vocabulary();
        Config[] cs = c.initial();
        int at = 0;
        while (at < b.length) {
            long[] fast = c.allowed(cs, 1 << 20, false);
            assertThat(fast).as("mask at %d of %s", at, doc).isEqualTo(c.allowed(cs, 1 << 20, true));
            int best = -1;
            for (int t = 0; t < v.size(); t++) {
                byte[] tb = v.bytes(t);
                if (tb != null && (fast[t >>> 6] & (1L << t)) != 0 && tb.length <= b.length - at
                        && java.util.Arrays.equals(tb, 0, tb.length, b, at, at + tb.length)
                        && (best < 0 || tb.length > v.bytes(best).length)) {
                    best = t;
                }
            }
            if (best < 0) {
                return false;
            }
            cs = c.parser().step(cs, v.bytes(best));
            at += v.bytes(best).length;
        }
        return c.parser().accepting(cs);
    }
}
