package io.tqserve.api;

import io.tqserve.toolcall.Conversation;
import io.tqserve.toolcall.ToolSpec;
import java.util.List;
import java.util.Map;

/**
 * The chat-only parts of a request: messages as the chat template receives them, tools, tool_choice and
 * response_format.
 *
 * @param conversation      messages, tools and template keywords as the chat template renders them
 * @param toolSpecs         the functions of {@code tools}
 * @param toolChoice        none, auto, required or function
 * @param namedTool         the function tool_choice names, or null
 * @param parallelToolCalls parallel_tool_calls (default true)
 * @param format            response_format
 * @param thinkingBudget    thinking_token_budget: most tokens of reasoning before its end marker is forced, or null
 */
record ChatRequest(Conversation conversation, List<ToolSpec> toolSpecs, String toolChoice,
        String namedTool, boolean parallelToolCalls, ResponseFormat format, Integer thinkingBudget) {

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
