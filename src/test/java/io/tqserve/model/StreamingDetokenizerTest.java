package io.tqserve.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

class StreamingDetokenizerTest {

    private static final Path MODEL = Path.of("models/tiny-llama-h128");
    /** Emoji (incl. a ZWJ sequence and a flag), CJK and accented Latin; the man-page vocabulary splits them. */
    private static final String MULTIBYTE = "Emoji 🎉👩‍💻🇫🇷 and 日本語のテキスト, 中文字符, "
            + "accented: café, naïve, Ångström, Œuvre; Ελληνικά, Кириллица, עברית, 한국어. 𝔘𝔫𝔦𝔠𝔬𝔡𝔢!";

    private static Tokenizer tokenizer;

    @BeforeAll
    static void load() throws Exception {
        tokenizer = Tokenizer.load(MODEL);
    }

    @AfterAll
    static void close() {
        tokenizer.close();
    }

    private static List<String> stream(int[] ids, boolean skipSpecial) {
        StreamingDetokenizer detokenizer = new StreamingDetokenizer(tokenizer, skipSpecial);
        List<String> pieces = new ArrayList<>();
        for (int id : ids) {
            pieces.add(detokenizer.next(id));
        }
        pieces.add(detokenizer.flush());
        assertEquals(ids.length, detokenizer.tokenCount());
        return pieces;
    }

    private static void assertWholeCharacters(String piece) {
        assertFalse(piece.indexOf('\uFFFD') >= 0, "piece contains U+FFFD: " + piece);
        for (int i = 0; i < piece.length(); i++) {
            char c = piece.charAt(i);
            if (Character.isHighSurrogate(c)) {
                assertTrue(i + 1 < piece.length() && Character.isLowSurrogate(piece.charAt(i + 1)),
                        "lone high surrogate in " + piece);
                i++;
            } else {
                assertFalse(Character.isLowSurrogate(c), "lone low surrogate in " + piece);
            }
        }
    }

    @Test
    void streamsMultiByteTextWithoutEverEmittingHalfACharacter() {
        int[] ids = tokenizer.encode(MULTIBYTE);
        int splitting = 0;
        for (int id : ids) {
            if (tokenizer.decode(new int[] {id}).indexOf('\uFFFD') >= 0) {
                splitting++;
            }
        }
        assertTrue(splitting >= 10, "the test text must contain tokens that split characters, found " + splitting);

        List<String> pieces = stream(ids, false);
        assertEquals(MULTIBYTE, tokenizer.decode(ids));
        assertEquals(tokenizer.decode(ids), String.join("", pieces));
        pieces.forEach(StreamingDetokenizerTest::assertWholeCharacters);
        assertEquals("", pieces.getLast(), "nothing is left for flush when the text ends on a whole character");
    }

    @Test
    void streamsEveryReferenceGreedyContinuationToItsText() throws Exception {
        JsonNode reference = JsonMapper.builder().build().readTree(MODEL.resolve("reference_outputs.json").toFile());
        for (JsonNode prompt : reference.path("prompts")) {
            int[] ids = TokenizerTest.ints(prompt.path("greedy_32"));
            assertEquals(prompt.path("greedy_32_text").asString(), String.join("", stream(ids, false)));
        }
    }

    @Test
    void skipsSpecialTokensWhenAskedAndByDefault() {
        int[] ids = tokenizer.encode("<|im_start|>assistant\nHello 世界<|im_end|>");
        assertEquals("assistant\nHello 世界", String.join("", stream(ids, true)));
        assertEquals("<|im_start|>assistant\nHello 世界<|im_end|>", String.join("", stream(ids, false)));
        StreamingDetokenizer byDefault = new StreamingDetokenizer(tokenizer);
        StringBuilder out = new StringBuilder();
        for (int id : ids) {
            out.append(byDefault.next(id));
        }
        assertEquals("assistant\nHello 世界", out.append(byDefault.flush()).toString());
    }

    @Test
    void flushEmitsAnUnfinishedCharacterAtTheEndAsTheFullDecodeDoes() {
        int[] full = tokenizer.encode("ok 🎉");
        int[] cut = java.util.Arrays.copyOf(full, full.length - 1);
        String expected = tokenizer.decode(cut);
        assertTrue(expected.endsWith("\uFFFD"), "the cut must end inside the emoji: " + expected);
        List<String> pieces = stream(cut, false);
        assertEquals(expected, String.join("", pieces));
        assertTrue(pieces.getLast().endsWith("\uFFFD"));
        pieces.subList(0, pieces.size() - 1).forEach(StreamingDetokenizerTest::assertWholeCharacters);
    }

    @Test
    void concatenationEqualsTheFullDecodeForRandomTokenSequencesWithInvalidBytes() {
        SplittableRandom random = new SplittableRandom(42);
        for (int round = 0; round < 20; round++) {
            int[] ids = random.ints(300, 0, tokenizer.vocabSize()).toArray();
            assertEquals(tokenizer.decode(ids), String.join("", stream(ids, false)), "round " + round);
        }
    }

    @Test
    void decodesABoundedWindowPerToken() {
        String text = "word 字 ".repeat(2000);
        StreamingDetokenizer detokenizer = new StreamingDetokenizer(tokenizer, false);
        StringBuilder out = new StringBuilder();
        int widest = 0;
        for (int id : tokenizer.encode(text)) {
            out.append(detokenizer.next(id));
            widest = Math.max(widest, detokenizer.windowTokens());
        }
        out.append(detokenizer.flush());
        assertEquals(text, out.toString());
        assertTrue(widest <= 16, "window grew to " + widest + " tokens");
    }
}
