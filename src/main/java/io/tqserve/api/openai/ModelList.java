package io.tqserve.api.openai;

import java.util.List;

/** {@code GET /v1/models}. */
public record ModelList(String object, List<ModelCard> data) {
    public static ModelList of(ModelCard card) {
        return new ModelList("list", List.of(card));
    }

    /** One served model; max_model_len is vLLM's extension. */
    public record ModelCard(String id, String object, long created, String ownedBy, int maxModelLen) {
        public ModelCard(String id, long created, int maxModelLen) {
            this(id, "model", created, "tqserve", maxModelLen);
        }
    }
}
