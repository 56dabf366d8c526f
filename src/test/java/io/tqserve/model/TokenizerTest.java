package io.tqserve.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** The embedded model's tokenizer against its reference_outputs.json (computed with Hugging Face tokenizers). */
class TokenizerTest {

    private static final Path MODEL = Path.of("models/tiny-llama-h128");
    private static Tokenizer tokenizer;
    private static JsonNode reference;

    @BeforeAll
    static void load() throws Exception {
        tokenizer = Tokenizer.load(MODEL);
        reference = JsonMapper.builder().build().readTree(MODEL.resolve("reference_outputs.json").toFile());
    }

    @AfterAll
    static void close() {
        tokenizer.close();
    }

    static int[] ints(JsonNode array) {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).asInt();
        }
        return out;
    }

    @Test
    void encodesEveryReferencePromptToItsInputIds() {
        assertEquals(5, reference.path("prompts").size());
        for (JsonNode prompt : reference.path("prompts")) {
            assertArrayEquals(ints(prompt.path("input_ids")), tokenizer.encode(prompt.path("text").asString()),
                    prompt.path("text").asString());
        }
    }

    @Test
    void decodesEveryGreedyContinuationToItsReferenceText() {
        for (JsonNode prompt : reference.path("prompts")) {
            assertEquals(prompt.path("greedy_32_text").asString(), tokenizer.decode(ints(prompt.path("greedy_32"))));
        }
    }

    @Test
    void doesNotTruncateTextFarBeyond512AndModelMaxLength() {
        String text = "The quick brown fox jumps over the lazy dog, again and again. ".repeat(400);
        int[] ids = tokenizer.encode(text);
        assertTrue(ids.length > 4096, "only " + ids.length + " tokens");
        assertEquals(text, tokenizer.decode(ids));
    }

    @Test
    void knowsSpecialTokensBosEosAndVocabSize() {
        assertEquals(8192, tokenizer.vocabSize());
        assertEquals(Map.of("<|endoftext|>", 0, "<|im_start|>", 1, "<|im_end|>", 2), tokenizer.specialTokens());
        assertEquals(Set.of(0, 1, 2), tokenizer.specialTokenIds());
        assertEquals(1, tokenizer.specialTokenId("<|im_start|>").orElseThrow());
        assertTrue(tokenizer.specialTokenId("<|nope|>").isEmpty());
        assertEquals(0, tokenizer.bosTokenId().orElseThrow());
        assertArrayEquals(new int[] {0, 2}, tokenizer.eosTokenIds());
        assertTrue(tokenizer.isEos(2));
        assertFalse(tokenizer.isEos(1));
    }

    @Test
    void encodesSpecialTokenTextAsSingleIdsAndCanSkipThemOnDecode() {
        int[] ids = tokenizer.encode("<|im_start|>user\nhi<|im_end|>");
        assertEquals(1, ids[0]);
        assertEquals(2, ids[ids.length - 1]);
        assertEquals("<|im_start|>user\nhi<|im_end|>", tokenizer.decode(ids));
        assertEquals("user\nhi", tokenizer.decode(ids, true));
    }

    @Test
    void addsNoSpecialTokensByDefaultAndTheByteLevelPostProcessorAddsNoneEither() {
        String text = "The quick brown fox";
        assertArrayEquals(tokenizer.encode(text), tokenizer.encode(text, true));
    }

    @Test
    void decodesASubRangeOfIds() {
        int[] ids = tokenizer.encode("alpha beta gamma");
        assertEquals(tokenizer.decode(java.util.Arrays.copyOfRange(ids, 1, ids.length)),
                tokenizer.decode(ids, 1, ids.length, false));
    }

    @Test
    void switchesDjlToOfflineModeUnlessTheUserChoseOtherwise() {
        if (System.getenv("DJL_OFFLINE") == null) {
            assertEquals("true", System.getProperty("ai.djl.offline"));
        }
        if (System.getenv("OPT_OUT_TRACKING") == null) {
            assertEquals("true", System.getProperty("OPT_OUT_TRACKING"));
        }
    }
}
