package io.tqserve.api;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.InvalidMediaTypeException;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.server.ServerRequest;
import reactor.core.publisher.Mono;
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

    /**
     * The body of a JSON request, after its {@code Content-Type} was checked: exactly one header, parsable, type
     * {@code application/json}, no charset or UTF-8 (RFC 8259: JSON is UTF-8). Anything else is a 415 before the
     * body is read, so a browser's cross-origin "simple" request ({@code text/plain}, a form, no type at all: no
     * CORS preflight) is never executed. An empty body is returned as an empty array.
     */
    static Mono<byte[]> body(ServerRequest request) {
        return Mono.defer(() -> {
            requireJson(request.headers().header(HttpHeaders.CONTENT_TYPE));
            return request.bodyToMono(byte[].class).defaultIfEmpty(new byte[0]);
        });
    }

    static void requireJson(List<String> contentTypes) {
        if (contentTypes.size() != 1) {
            throw unsupported(contentTypes.isEmpty() ? "the request has no Content-Type"
                    : "the request has " + contentTypes.size() + " Content-Type headers");
        }
        MediaType type;
        try {
            type = MediaType.parseMediaType(contentTypes.getFirst());
        } catch (InvalidMediaTypeException e) {
            throw unsupported("the Content-Type cannot be parsed");
        }
        if (!type.getType().equals("application") || !type.getSubtype().equals("json")) {
            throw unsupported("Content-Type " + type.getType() + "/" + type.getSubtype() + " is not accepted");
        }
        if (type.getCharset() != null && !type.getCharset().equals(StandardCharsets.UTF_8)) {
            throw unsupported("charset " + type.getCharset().name() + " is not accepted (JSON is UTF-8)");
        }
    }

    /** 415 invalid_request_error, code unsupported_media_type; the message never echoes the header's text. */
    static ApiException unsupported(String why) {
        return new ApiException(HttpStatus.UNSUPPORTED_MEDIA_TYPE, "invalid_request_error", null,
                "unsupported_media_type", why + "; send Content-Type: application/json", null);
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
