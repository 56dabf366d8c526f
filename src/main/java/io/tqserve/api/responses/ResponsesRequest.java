package io.tqserve.api.responses;

import io.tqserve.api.ApiException;
import io.tqserve.api.openai.Wire;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * Translates an OpenAI Responses request ({@code POST /v1/responses}) into the chat completion request the rest
 * of the server serves: {@code instructions} becomes the first (system) message; {@code input} (a string, or
 * items: messages with {@code input_text} / {@code output_text} parts, {@code function_call},
 * {@code function_call_output}) becomes chat messages after the conversation of {@code previous_response_id};
 * function {@code tools}, {@code tool_choice}, {@code parallel_tool_calls}, {@code text.format} (response_format),
 * {@code max_output_tokens}, {@code temperature}, {@code top_p} and {@code reasoning.effort} map to their chat
 * fields. Built-in tools and the fields that would change the output but are not implemented are a 400 naming
 * them. Reasoning items of earlier turns are dropped.
 *
 * @param chat         the chat completion request body
 * @param conversation the messages of the conversation without the instructions (what a later request continuing
 *                     this response starts from, followed by this response's output)
 */
public record ResponsesRequest(ObjectNode chat, ArrayNode conversation) {
    /** Chat request fields named in errors, by the Responses field that holds them. */
    static final Map<String, String> PARAMS = Map.of("max_completion_tokens", "max_output_tokens",
            "response_format", "text.format", "reasoning_effort", "reasoning.effort", "messages", "input",
            "verbosity", "text.verbosity");
    /** Fields that change the output and that this server does not implement (refused by name). */
    static final List<String> FIELDS_REFUSED = List.of("background", "conversation", "prompt", "max_tool_calls");

    /**
     * @param body     the request
     * @param previous the conversation of the response named by {@code previous_response_id} (its messages and its
     *                 output as an assistant message), or null
     */
    public static ResponsesRequest of(JsonNode body, ArrayNode previous) {
        if (body == null || !body.isObject()) {
            throw ApiException.invalid(null, "the request body must be a JSON object");
        }
        for (String f : FIELDS_REFUSED) {
            JsonNode v = body.get(f);
            if (v != null && !v.isNull() && !(v.isBoolean() && !v.booleanValue())) {
                throw ApiException.invalid(f, "'" + f + "' is not supported by this server");
            }
        }
        JsonNode truncation = body.get("truncation");
        if (truncation != null && !truncation.isNull() && !"disabled".equals(truncation.asString(null))) {
            throw ApiException.invalid("truncation", "truncation: only \"disabled\" is supported");
        }
        JsonNode topLogprobs = body.get("top_logprobs");
        if (topLogprobs != null && !topLogprobs.isNull() && !(topLogprobs.isNumber() && topLogprobs.intValue() == 0)) {
            throw ApiException.invalid("top_logprobs", "'top_logprobs' is not supported by /v1/responses");
        }
        JsonNode include = body.get("include");
        if (include != null && include.isArray()) {
            for (JsonNode i : include) {
                if (i.isString() && i.asString().equals("message.output_text.logprobs")) {
                    throw ApiException.invalid("include", "include: message.output_text.logprobs is not supported");
                }
            }
        }
        ObjectNode chat = Wire.MAPPER.createObjectNode();
        for (String f : List.of("model", "temperature", "top_p", "parallel_tool_calls", "stream", "tqserve_lane",
                "seed", "top_k")) {
            JsonNode v = body.get(f);
            if (v != null) {
                chat.set(f, v);
            }
        }
        JsonNode max = body.get("max_output_tokens");
        if (max != null) {
            chat.set("max_completion_tokens", max);
        }
        JsonNode reasoning = body.get("reasoning");
        if (reasoning != null && !reasoning.isNull()) {
            if (!reasoning.isObject()) {
                throw ApiException.invalid("reasoning", "reasoning must be an object");
            }
            JsonNode effort = reasoning.get("effort");
            if (effort != null && !effort.isNull()) {
                chat.set("reasoning_effort", effort);
            }
        }
        text(body.get("text"), chat);
        ArrayNode messages = chat.putArray("messages");
        JsonNode instructions = body.get("instructions");
        if (instructions != null && !instructions.isNull()) {
            if (!instructions.isString()) {
                throw ApiException.invalid("instructions", "instructions must be a string");
            }
            messages.addObject().put("role", "system").put("content", instructions.asString());
        }
        ArrayNode conversation = Wire.MAPPER.createArrayNode();
        if (previous != null) {
            conversation.addAll(previous);
        }
        input(body.get("input"), conversation);
        messages.addAll(conversation);
        tools(body.get("tools"), chat);
        toolChoice(body.get("tool_choice"), chat);
        return new ResponsesRequest(chat, conversation);
    }

    private static void text(JsonNode text, ObjectNode chat) {
        if (text == null || text.isNull()) {
            return;
        }
        if (!text.isObject()) {
            throw ApiException.invalid("text", "text must be an object");
        }
        JsonNode verbosity = text.get("verbosity");
        if (verbosity != null && !verbosity.isNull()) {
            chat.set("verbosity", verbosity);
        }
        JsonNode format = text.get("format");
        if (format == null || format.isNull()) {
            return;
        }
        String type = format.path("type").asString("");
        switch (type) {
            case "text" -> {
            }
            case "json_object" -> chat.putObject("response_format").put("type", "json_object");
            case "json_schema" -> {
                ObjectNode rf = chat.putObject("response_format").put("type", "json_schema");
                ObjectNode js = rf.putObject("json_schema");
                for (String f : List.of("name", "schema", "strict", "description")) {
                    if (format.has(f)) {
                        js.set(f, format.get(f));
                    }
                }
                if (!format.path("schema").isObject()) {
                    throw ApiException.invalid("text.format.schema", "text.format.schema must be a JSON schema "
                            + "object");
                }
            }
            default -> throw ApiException.invalid("text.format.type", "text.format.type must be text, json_object or "
                    + "json_schema");
        }
    }

    private static void input(JsonNode input, ArrayNode out) {
        if (input == null || input.isNull()) {
            throw ApiException.invalid("input", "input is required");
        }
        if (input.isString()) {
            out.addObject().put("role", "user").put("content", input.asString());
            return;
        }
        if (!input.isArray() || input.isEmpty()) {
            throw ApiException.invalid("input", "input must be a string or a non-empty array of items");
        }
        for (int i = 0; i < input.size(); i++) {
            JsonNode item = input.get(i);
            String p = "input[" + i + "]";
            if (!item.isObject()) {
                throw ApiException.invalid(p, p + " must be an object");
            }
            String type = item.path("type").asString(item.has("role") ? "message" : "");
            switch (type) {
                case "message" -> message(item, p, out);
                case "function_call" -> {
                    for (String f : List.of("call_id", "name", "arguments")) {
                        if (!item.path(f).isString()) {
                            throw ApiException.invalid(p + "." + f, p + "." + f + " must be a string");
                        }
                    }
                    ObjectNode last = out.isEmpty() ? null : (ObjectNode) out.get(out.size() - 1);
                    ObjectNode assistant;
                    if (last != null && last.path("role").asString("").equals("assistant")) {
                        assistant = last;
                    } else {
                        assistant = out.addObject().put("role", "assistant");
                        assistant.putNull("content");
                    }
                    ArrayNode calls = assistant.has("tool_calls") ? (ArrayNode) assistant.get("tool_calls")
                            : assistant.putArray("tool_calls");
                    ObjectNode call = calls.addObject().put("id", item.get("call_id").asString()).put("type",
                            "function");
                    call.putObject("function").put("name", item.get("name").asString())
                            .put("arguments", item.get("arguments").asString());
                }
                case "function_call_output" -> {
                    if (!item.path("call_id").isString()) {
                        throw ApiException.invalid(p + ".call_id", p + ".call_id must be a string");
                    }
                    JsonNode o = item.get("output");
                    String output = o != null && o.isString() ? o.asString()
                            : o != null && o.isArray() ? parts(o, p + ".output") : null;
                    if (output == null) {
                        throw ApiException.invalid(p + ".output", p + ".output must be a string or input_text parts");
                    }
                    out.addObject().put("role", "tool").put("tool_call_id", item.get("call_id").asString())
                            .put("content", output);
                }
                case "reasoning" -> {
                }
                case "" -> throw ApiException.invalid(p + ".type", p + ".type is required");
                default -> throw ApiException.invalid(p + ".type", p + ".type '" + printable(type)
                        + "' is not supported (supported: message, function_call, function_call_output, reasoning)");
            }
        }
    }

    private static void message(JsonNode item, String p, ArrayNode out) {
        String role = item.path("role").asString("");
        if (!List.of("user", "assistant", "system", "developer").contains(role)) {
            throw ApiException.invalid(p + ".role", p + ".role must be user, assistant, system or developer");
        }
        JsonNode c = item.get("content");
        String content;
        if (c != null && c.isString()) {
            content = c.asString();
        } else if (c != null && c.isArray()) {
            content = parts(c, p + ".content");
        } else {
            throw ApiException.invalid(p + ".content", p + ".content must be a string or an array of parts");
        }
        out.addObject().put("role", role.equals("developer") ? "system" : role).put("content", content);
    }

    private static String parts(JsonNode parts, String p) {
        StringBuilder sb = new StringBuilder();
        for (int j = 0; j < parts.size(); j++) {
            JsonNode part = parts.get(j);
            String q = p + "[" + j + "]";
            String type = part.path("type").asString("");
            if (!type.equals("input_text") && !type.equals("output_text") && !type.equals("text")) {
                throw ApiException.invalid(q + ".type", q + ".type '" + printable(type) + "' is not supported; this "
                        + "model takes text (input_text, output_text)");
            }
            if (!part.path("text").isString()) {
                throw ApiException.invalid(q + ".text", q + ".text must be a string");
            }
            sb.append(part.get("text").asString());
        }
        return sb.toString();
    }

    private static void tools(JsonNode t, ObjectNode chat) {
        if (t == null || t.isNull()) {
            return;
        }
        if (!t.isArray()) {
            throw ApiException.invalid("tools", "tools must be an array");
        }
        ArrayNode out = chat.putArray("tools");
        for (int i = 0; i < t.size(); i++) {
            JsonNode tool = t.get(i);
            String p = "tools[" + i + "]";
            String type = tool.path("type").asString("");
            if (!type.equals("function")) {
                throw ApiException.invalid(p + ".type", "built-in tool '" + printable(type) + "' (" + p + ".type) is "
                        + "not supported by this server; only function tools are");
            }
            if (!tool.path("name").isString()) {
                throw ApiException.invalid(p + ".name", p + ".name is required");
            }
            ObjectNode fn = out.addObject().put("type", "function").putObject("function");
            fn.put("name", tool.get("name").asString());
            if (tool.path("description").isString()) {
                fn.put("description", tool.get("description").asString());
            }
            if (tool.has("parameters")) {
                fn.set("parameters", tool.get("parameters"));
            }
        }
    }

    private static void toolChoice(JsonNode tc, ObjectNode chat) {
        if (tc == null || tc.isNull()) {
            return;
        }
        if (tc.isString()) {
            chat.set("tool_choice", tc);
            return;
        }
        if (tc.isObject() && tc.path("type").asString("").equals("function") && tc.path("name").isString()) {
            chat.putObject("tool_choice").put("type", "function").putObject("function")
                    .put("name", tc.get("name").asString());
            return;
        }
        throw ApiException.invalid("tool_choice", "tool_choice must be none, auto, required or "
                + "{\"type\": \"function\", \"name\": ...}");
    }

    static String printable(String s) {
        return s.length() > 64 ? s.substring(0, 64) + "..." : s;
    }

    /** The error naming the Responses field that holds the chat request's field. */
    public static ApiException rename(ApiException e) {
        String param = e.param();
        if (param == null) {
            return e;
        }
        String to = PARAMS.get(param);
        if (to == null && param.startsWith("messages[")) {
            to = "input";
        }
        if (to == null) {
            return e;
        }
        return new ApiException(e.status(), e.type(), to, e.code(), e.getMessage().replace(param, to),
                e.retryAfter());
    }
}
