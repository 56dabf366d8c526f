package io.tqserve.model;

import java.util.ArrayList;
import java.util.List;

/** TEMPORARY placeholder for local compilation; replaced by the tokenizer branch. */
public final class StreamingDetokenizer {
    private final Tokenizer tok;
    private final List<Integer> ids = new ArrayList<>();
    private int emitted;

    public StreamingDetokenizer(Tokenizer tok) {
        this.tok = tok;
    }

    public String next(int id) {
        ids.add(id);
        String all = tok.decode(ids.stream().mapToInt(Integer::intValue).toArray());
        if (all.endsWith("\uFFFD")) {
            return "";
        }
        String out = all.substring(Math.min(emitted, all.length()));
        emitted = all.length();
        return out;
    }

    public String flush() {
        String all = tok.decode(ids.stream().mapToInt(Integer::intValue).toArray());
        String out = all.substring(Math.min(emitted, all.length()));
        emitted = all.length();
        return out;
    }
}
