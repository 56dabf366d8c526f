package io.tqserve.toolcall;

/**
 * A parsed tool call.
 *
 * @param id        {@code call_...}, unique per response
 * @param name      the function name
 * @param arguments the arguments as a JSON object text ({@code "{}"} when the model gave none)
 */
public record ToolCall(String id, String name, String arguments) {
}
