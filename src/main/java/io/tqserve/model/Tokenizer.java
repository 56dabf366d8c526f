package io.tqserve.model;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;

/** TEMPORARY placeholder for local compilation; replaced by the tokenizer branch. */
public final class Tokenizer implements AutoCloseable {
    private final HuggingFaceTokenizer tok;

    private Tokenizer(HuggingFaceTokenizer tok) {
        this.tok = tok;
    }

    public static Tokenizer load(Path dir) throws IOException {
        return new Tokenizer(HuggingFaceTokenizer.newInstance(dir.resolve("tokenizer.json"),
                Map.of("truncation", "false", "padding", "false", "addSpecialTokens", "false")));
    }

    public int[] encode(String text) {
        long[] ids = tok.encode(text, false, false).getIds();
        int[] out = new int[ids.length];
        for (int i = 0; i < ids.length; i++) {
            out[i] = (int) ids[i];
        }
        return out;
    }

    public String decode(int[] ids) {
        long[] l = new long[ids.length];
        for (int i = 0; i < ids.length; i++) {
            l[i] = ids[i];
        }
        return tok.decode(l, false);
    }

    @Override
    public void close() {
        tok.close();
    }
}
