package io.tqserve.api.openai;

import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.json.JsonMapper;

/** The JSON mapper of the OpenAI wire format. */
public final class Wire {
    /** snake_case property names; everything else Jackson's defaults. */
    public static final JsonMapper MAPPER = JsonMapper.builder()
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE).build();

    private Wire() {
    }

    /** Serializes a wire record. */
    public static String json(Object value) {
        return MAPPER.writeValueAsString(value);
    }
}
