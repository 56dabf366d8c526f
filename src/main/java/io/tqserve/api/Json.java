package io.tqserve.api;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import tools.jackson.core.JacksonException;
import tools.jackson.core.StreamReadConstraints;
import tools.jackson.core.StreamReadFeature;
import tools.jackson.core.json.JsonFactory;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Reads request bodies; malformed JSON is a 400, never a 500. Stricter than Jackson's defaults: at most
 * {@link #MAX_DEPTH} levels of nesting (an OpenAI request needs 4), names of at most {@link #MAX_NAME_CHARS}
 * characters, numbers of at most {@link #MAX_NUMBER_CHARS} digits, and a name given twice in one object is an error
 * (which of two values a proxy and the server would each take is ambiguous). NaN and Infinity are not JSON and
 * are rejected (Jackson's default). The body must be well-formed UTF-8, checked with the JDK's strict decoder.
 */
final class Json {
    static final int MAX_DEPTH = 32;
    static final int MAX_NAME_CHARS = 1024;
    static final int MAX_NUMBER_CHARS = 100;

    private static final JsonMapper READER = JsonMapper.builder(JsonFactory.builder()
                    .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MAX_DEPTH)
                            .maxNameLength(MAX_NAME_CHARS).maxNumberLength(MAX_NUMBER_CHARS).build())
                    .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
                    .build())
            .build();

    private Json() {
    }

    static JsonNode read(byte[] body) {
        if (body.length == 0) {
            throw ApiException.invalid(null, "the request body is empty; send a JSON object");
        }
        String text;
        try {
            // Jackson decodes UTF-8 leniently (it accepts overlong forms such as C0 AF for '/'); Java's decoder
            // does not, and anything it rejects is not UTF-8.
            text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(body)).toString();
        } catch (CharacterCodingException e) {
            throw ApiException.invalid(null, "invalid_utf8", "the request body is not valid UTF-8");
        }
        try {
            return READER.readTree(text);
        } catch (JacksonException e) {
            throw ApiException.invalid(null, "the request body is not valid JSON: " + e.getOriginalMessage());
        }
    }
}
