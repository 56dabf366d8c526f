package io.tqserve.api;

import io.tqserve.constraint.Vocabulary;
import io.tqserve.model.Model;
import io.tqserve.model.TokenBytes;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.WeakHashMap;

/**
 * The constraint {@link Vocabulary} of each loaded model (its token bytes as a trie), built once per model. The
 * model loader builds it before the server is ready (a 150k-token vocabulary takes a second or two), so no
 * request's compile pays for it inside its time budget, and no unrelated request waits behind it.
 */
public final class ConstraintVocabularies {
    private static final Map<Model, Vocabulary> BY_MODEL = new WeakHashMap<>();

    private ConstraintVocabularies() {
    }

    /** The vocabulary of {@code model}, built on first use. */
    public static Vocabulary of(Model model) {
        synchronized (BY_MODEL) {
            Vocabulary v = BY_MODEL.get(model);
            if (v == null) {
                try {
                    v = new Vocabulary(ChatFormats.of(model).constraintTokenBytes(
                            TokenBytes.load(model.dir(), model.config().vocabSize())));
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
                BY_MODEL.put(model, v);
            }
            return v;
        }
    }
}
