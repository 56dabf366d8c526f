package io.tqserve.toolcall;

import java.util.Map;

/**
 * A function the client offers ({@code tools[i].function}).
 *
 * @param name       the function name
 * @param parameters its JSON schema as plain Java values (an empty object schema when the client gave none)
 */
public record ToolSpec(String name, Map<String, Object> parameters) {
}
