package io.tqserve.api;

import io.tqserve.toolcall.ToolSpec;
import java.util.List;
import java.util.Map;

/**
 * The chat-only parts of a request: messages as the chat template receives them, tools, tool_choice and
 * response_format.
 *
 * @param turns             messages as JSON-like maps ({@code role}, {@code content}, {@code tool_calls} with
 *                          parsed {@code arguments}, {@code tool_call_id}), as transformers' apply_chat_template
 *                          takes them
 * @param tools             the request's {@code tools} as JSON-like maps (passed to the template), empty if none
 * @param toolSpecs         the functions of {@code tools}
 * @param toolChoice        none, auto, required or function
 * @param namedTool         the function tool_choice names, or null
 * @param parallelToolCalls parallel_tool_calls (default true)
 * @param format            response_format
 */
record ChatRequest(List<Map<String, Object>> turns, List<Object> tools, List<ToolSpec> toolSpecs, String toolChoice,
        String namedTool, boolean parallelToolCalls, ResponseFormat format) {

    /** Whether the template gets tools and the output may hold calls. */
    boolean toolsActive() {
        return !toolSpecs.isEmpty() && !toolChoice.equals("none");
    }

    /** Whether a call is forced (required or a named function). */
    boolean callForced() {
        return toolsActive() && (toolChoice.equals("required") || toolChoice.equals("function"));
    }

    /**
     * response_format.
     *
     * @param type   text, json_object or json_schema
     * @param schema the JSON schema (json_schema), as plain Java values, or null
     * @param name   json_schema.name, or null
     * @param strict json_schema.strict
     */
    record ResponseFormat(String type, Map<String, Object> schema, String name, boolean strict) {
        static final ResponseFormat TEXT = new ResponseFormat("text", null, null, false);

        boolean constrained() {
            return !type.equals("text");
        }
    }
}
