package io.tqserve.api;

import io.tqserve.api.openai.Wire;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;

/** Reads request bodies; malformed JSON is a 400, never a 500. */
final class Json {
    private Json() {
    }

    static JsonNode read(byte[] body) {
        if (body.length == 0) {
            throw ApiException.invalid(null, "the request body is empty; send a JSON object");
        }
        try {
            return Wire.MAPPER.readTree(body);
        } catch (JacksonException e) {
            throw ApiException.invalid(null, "the request body is not valid JSON: " + e.getOriginalMessage());
        }
    }
}
