package io.tqserve.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.text.Normalizer;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Qwen3's tokenizer (byte-level BPE with an NFC normalizer and a pre-tokenizer that splits digits one by one),
 * from a cut-down copy ({@code qwen3-tokenizer-sample/README.md}): the bytes {@link TokenBytes} gives each token
 * put back together are exactly the UTF-8 of the normalized text, which is what constrained decoding matches
 * against.
 */
class TokenBytesQwen3Test {
    private static final Path DIR = Path.of("src/test/resources/qwen3-tokenizer-sample");

    @Test
    void tokenBytesSpellTheEncodedText() throws Exception {
        byte[][] bytes = TokenBytes.load(DIR);
        assertThat(bytes.length).isEqualTo(4282); // ids up to the last added token, </think> = 4281
        try (Tokenizer t = Tokenizer.load(DIR)) {
            for (String text : List.of("{\"name\": \"Zoë\", \"n\": 12345, \"x\": 1e-05, \"ok\": true}",
                    "{\"city\": \"東京\", \"emoji\": \"😀 🚀\", \"tab\": \"a\\tb\", \"s\": \"  two  spaces\\n\\n\"}",
                    "caf\u0065\u0301 \u00e9 déjà vu — “quotes” ½ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "<think>plan</think>{\"a\": [1, 2.5, -3]}")) {
                int[] ids = t.encode(text, false);
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                for (int id : ids) {
                    assertThat(bytes[id]).as("bytes of token %d in %s", id, text).isNotNull();
                    out.writeBytes(bytes[id]);
                }
                assertThat(out.toString(StandardCharsets.UTF_8))
                        .isEqualTo(Normalizer.normalize(text, Normalizer.Form.NFC));
            }
            // digits are split one by one (the \p{N} branch of the pre-tokenizer regex)
            int[] digits = t.encode("12345", false);
            assertThat(digits).hasSize(5);
            assertThat(new String(bytes[digits[2]], StandardCharsets.US_ASCII)).isEqualTo("3");
            // an added, non-special token is its content; a special token has no bytes
            assertThat(t.encode("<think>", false)).containsExactly(4280);
            assertThat(new String(bytes[4280], StandardCharsets.UTF_8)).isEqualTo("<think>");
            assertThat(bytes[4258]).isNull(); // <|im_end|>
            assertThat(bytes[4256]).isNull(); // <|endoftext|>
            // a space before a letter run is part of the run's token, byte-level: " the" -> "Ġthe" -> 0x20 t h e
            int[] the = t.encode(" the", false);
            assertThat(the).hasSize(1);
            assertThat(bytes[the[0]]).containsExactly(' ', 't', 'h', 'e');
        }
    }
}
