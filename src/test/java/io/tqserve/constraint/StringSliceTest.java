package io.tqserve.constraint;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.constraint.Grammar.Lex;
import io.tqserve.constraint.Parser.Config;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The general slice: which tokens it holds, and that a lexeme state's mask entry walked over the rest of the trie
 * (from the slice's tokens) is the entry of the walk over the whole trie, for every state of patterns and formats
 * over a random vocabulary.
 */
class StringSliceTest {
    private static final String[] PIECES = {"a", "b", "z", "Q", "0", "7", "-", ".", "/", ":", "@", " ", "_", "T", "%",
        "\"", "\\", "\\\"", "\\n", "\n", "\t", "é", "中", "€", "\u2028", "😀", "}", ",", "<", "#"};

    /** Every byte, then random strings of pieces, some with a stray UTF-8 byte at either end. */
    static Vocabulary vocabulary(long seed, int size) {
        SplittableRandom r = new SplittableRandom(seed);
        Set<String> seen = new LinkedHashSet<>();
        List<byte[]> t = new ArrayList<>();
        for (int b = 0; b < 256; b++) {
            t.add(new byte[] {(byte) b});
        }
        while (t.size() < size) {
            StringBuilder sb = new StringBuilder();
            int n = 1 + r.nextInt(5);
            for (int i = 0; i < n; i++) {
                sb.append(PIECES[r.nextInt(PIECES.length)]);
            }
            byte[] b = sb.toString().getBytes(StandardCharsets.UTF_8);
            int cut = r.nextInt(8);
            if (cut == 0 && b.length > 1) { // a token ending inside a character
                b = java.util.Arrays.copyOf(b, b.length - 1);
            } else if (cut == 1 && b.length > 1) { // starting inside one
                b = java.util.Arrays.copyOfRange(b, 1, b.length);
            }
            if (seen.add(new String(b, StandardCharsets.ISO_8859_1))) {
                t.add(b);
            }
        }
        t.add(null);
        return new Vocabulary(t.toArray(byte[][]::new));
    }

    private static boolean inSlice(Vocabulary v, String s) {
        byte[] b = s.getBytes(StandardCharsets.ISO_8859_1);
        for (int t = 0; t < v.size(); t++) {
            if (java.util.Arrays.equals(v.bytes(t), b)) {
                return (v.slice.tokens[t >>> 6] & (1L << t)) != 0;
            }
        }
        throw new AssertionError("no token " + s);
    }

    private static String latin(String s) {
        return new String(s.getBytes(StandardCharsets.UTF_8), StandardCharsets.ISO_8859_1);
    }

    @Test
    void theSliceHoldsTokensOfPlainStringCharacters() {
        List<byte[]> t = new ArrayList<>();
        for (String s : List.of("abc", " the", "é", "中文", "a\"", "\\n", "x\ny", "\u007f", "😀", "a\u00e9")) {
            t.add(s.getBytes(StandardCharsets.UTF_8));
        }
        t.add(new byte[] {'a', (byte) 0xE4}); // ends inside 中
        t.add(new byte[] {(byte) 0xB8, (byte) 0xAD}); // starts inside it
        t.add(new byte[] {(byte) 0xED, (byte) 0xA0, (byte) 0x80}); // a surrogate
        t.add(new byte[] {(byte) 0xC0, (byte) 0x80}); // an overlong NUL
        Vocabulary v = new Vocabulary(t.toArray(byte[][]::new));
        for (String s : List.of("abc", " the", "é", "中文", "\u007f", "a\u00e9")) {
            assertThat(inSlice(v, latin(s))).as(s).isTrue();
        }
        assertThat(inSlice(v, "a\u00e4")).isTrue();
        for (String s : List.of("a\"", "\\n", "x\ny", "😀")) {
            assertThat(inSlice(v, latin(s))).as(s).isFalse();
        }
        assertThat(inSlice(v, "\u00b8\u00ad")).isFalse();
        assertThat(inSlice(v, "\u00ed\u00a0\u0080")).isFalse();
        assertThat(inSlice(v, "\u00c0\u0080")).isFalse();
        // the rest of the trie: the root and the paths to the tokens outside the slice
        Vocabulary.Preorder rest = v.slice.rest;
        assertThat(rest.label.length).isLessThan(v.preorder.label.length);
        for (int i = 0; i < rest.label.length; i++) {
            assertThat(rest.end[i]).isGreaterThan(i).isLessThanOrEqualTo(rest.label.length);
        }
    }

    @Test
    void slicedEntriesEqualTheWalkOfTheWholeTrie() {
        Vocabulary v = vocabulary(29, 4000);
        long[] quote = new long[4];
        quote['"' >>> 6] |= 1L << '"';
        long[] letter = quote.clone();
        letter['a' >>> 6] |= 1L << 'a'; // a follow byte of the slice: no slicing
        LexemeMasks masks = new LexemeMasks(v, 1L << 30);
        int states = 0;
        int sliced = 0;
        for (String schema : List.of(
                "{\"type\": \"string\", \"pattern\": \"\\\\d{4}-\\\\d{2}-\\\\d{2}T\\\\d{2}\"}",
                "{\"type\": \"string\", \"pattern\": \"^[A-Za-z0-9_][^<>*#.%&:\\\\\\\\+?/]*$\"}",
                "{\"type\": \"string\", \"pattern\": \"^a.*b$\"}",
                "{\"type\": \"string\", \"pattern\": \"[^@]+@[a-z]+\"}",
                "{\"type\": \"string\", \"pattern\": \"^[a-z\\\\d./-]+$\"}",
                "{\"type\": \"string\", \"pattern\": \"^.{2,5}$\"}",
                "{\"type\": \"string\", \"format\": \"uri\"}",
                "{\"type\": \"string\", \"format\": \"email\"}",
                "{\"type\": \"string\", \"pattern\": \"(é|中)+\\\\\\\\\"}")) {
            Grammar g = SchemaCompiler.compile(GrammarEngineTest.schema(schema));
            Parser p = new Parser(ConstraintLimits.DEFAULT);
            Lexeme x = null;
            for (Config c : p.step(p.start(g.root), new byte[] {'"'})) {
                if (c.leaf instanceof Lex l) {
                    x = l.lexeme;
                }
            }
            assertThat(x).as(schema).isNotNull();
            for (int s = 0; s < x.states(); s++) {
                for (long[] follow : List.of(quote, letter)) {
                    LexemeMasks.Entry a = masks.build(x, s, follow, MaskBudget.unlimited(), true);
                    LexemeMasks.Entry b = masks.build(x, s, follow, MaskBudget.unlimited(), false);
                    assertThat(a.all()).as("%s state %d", schema, s).isEqualTo(b.all());
                    assertThat(a.exitNodes()).as("%s state %d", schema, s).isEqualTo(b.exitNodes());
                    assertThat(a.exitUnits()).as("%s state %d", schema, s).isEqualTo(b.exitUnits());
                    states++;
                }
                sliced += x.sliceSafe(s, Long.MAX_VALUE, MaskBudget.unlimited()) ? 1 : 0;
            }
        }
        assertThat(states).isGreaterThan(100);
        assertThat(sliced).isGreaterThan(10); // the unanchored patterns' and .*'s states
    }

    @Test
    void masksOfAnUnanchoredPatternEqualTheExactWalk() {
        Vocabulary v = vocabulary(33, 3000);
        TokenConstraint c = new TokenConstraint(SchemaCompiler.compile(GrammarEngineTest.schema("""
                {"type": "object", "properties": {"t": {"type": "string", "pattern": "\\\\d{2}:\\\\d{2}"},
                 "u": {"type": "string", "format": "uri"}}}""")), v);
        int compared = GrammarEngineTest.compareAlongDocuments(c, List.of(
                "{\"t\": \"at 12:30 or é中\\\"x\", \"u\": \"http://a.b/c?d#e\"}", "{\"t\": \"\\\\ 00:00\"}"),
                4, 1 << 20);
        assertThat(compared).isGreaterThan(100);
    }
}
