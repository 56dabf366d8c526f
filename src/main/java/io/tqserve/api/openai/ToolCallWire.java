package io.tqserve.api.openai;

import com.fasterxml.jackson.annotation.JsonInclude;

/**
 * A tool call in a message ({@code id}, {@code type}, {@code function}) or a stream delta (with {@code index}; a
 * call's first delta carries id, type and name, later ones argument fragments). Absent fields are omitted.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ToolCallWire(Integer index, String id, String type, Function function) {

    /** The called function: its name and its arguments as JSON text. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Function(String name, String arguments) {
    }

    /** A complete call of a non-streamed message. */
    public static ToolCallWire of(String id, String name, String arguments) {
        return new ToolCallWire(null, id, "function", new Function(name, arguments));
    }
}
