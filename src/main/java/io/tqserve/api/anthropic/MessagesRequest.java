package io.tqserve.api.anthropic;

import io.tqserve.api.ApiException;
import io.tqserve.api.openai.Wire;
import java.util.Map;
import java.util.Set;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * Translates an Anthropic Messages request ({@code POST /v1/messages}) into the chat completion request the rest
 * of the server serves: {@code system} becomes the first message, {@code text} blocks message content,
 * {@code tool_use} blocks an assistant's {@code tool_calls}, {@code tool_result} blocks {@code tool} messages,
 * {@code tools} function tools, {@code tool_choice} (auto / any / tool / none) the chat tool_choice,
 * {@code stop_sequences} stop strings, {@code thinking} the chat request's reasoning switch. Thinking blocks of
 * earlier turns are dropped, as Anthropic drops them from the context. Images, documents, server tools and the
 * fields that would change the output but are not implemented are a 400 naming them.
 */
public final class MessagesRequest {
    /** Fields that change the output and that this server does not implement. */
    static final Set<String> UNSUPPORTED = Set.of("mcp_servers", "container", "context_management");
    /** Anthropic's most stop sequences the chat path takes (OpenAI's 4). */
    static final int MAX_STOP = 4;
    /** Chat request fields named in errors, by the Messages field that holds them. */
    static final Map<String, String> PARAMS = Map.of("max_completion_tokens", "max_tokens", "stop", "stop_sequences",
            "reasoning_effort", "thinking", "thinking_token_budget", "thinking", "response_format", "tools",
            "parallel_tool_calls", "tool_choice");

    private MessagesRequest() {
    }

    /** The chat completion request body of a Messages request. */
    public static ObjectNode toChat(JsonNode body) {
        return toChat(body, false);
    }

    /** As {@link #toChat(JsonNode)}; for count_tokens, whose requests have no max_tokens. */
    public static ObjectNode toChat(JsonNode body, boolean countOnly) {
        if (body == null || !body.isObject()) {
            throw ApiException.invalid(null, "the request body must be a JSON object");
        }
        for (String f : UNSUPPORTED) {
            if (present(body, f)) {
                throw ApiException.invalid(f, f + ": not supported by this server");
            }
        }
        ObjectNode chat = Wire.MAPPER.createObjectNode();
        copy(body, chat, "model", "model");
        JsonNode max = body.get("max_tokens");
        if (countOnly) {
            max = null;
        } else if (max == null || max.isNull()) {
            throw ApiException.invalid("max_tokens", "max_tokens: Field required");
        }
        if (max != null) {
            chat.set("max_tokens", max);
        }
        JsonNode temperature = body.get("temperature");
        if (temperature != null && temperature.isNumber()
                && !(temperature.doubleValue() >= 0 && temperature.doubleValue() <= 1)) {
            throw ApiException.invalid("temperature", "temperature: must be in [0, 1]");
        }
        copy(body, chat, "temperature", "temperature");
        copy(body, chat, "top_p", "top_p");
        copy(body, chat, "top_k", "top_k");
        copy(body, chat, "stream", "stream");
        copy(body, chat, "tqserve_lane", "tqserve_lane");
        copy(body, chat, "seed", "seed");
        JsonNode stops = body.get("stop_sequences");
        if (stops != null && !stops.isNull()) {
            if (!stops.isArray()) {
                throw ApiException.invalid("stop_sequences", "stop_sequences: must be an array of strings");
            }
            if (stops.size() > MAX_STOP) {
                throw ApiException.invalid("stop_sequences", "stop_sequences: this server takes at most " + MAX_STOP);
            }
            if (!stops.isEmpty()) {
                chat.set("stop", stops);
            }
        }
        JsonNode metadata = body.get("metadata");
        if (metadata != null && !metadata.isNull() && !metadata.isObject()) {
            throw ApiException.invalid("metadata", "metadata: must be an object");
        }
        thinking(body.get("thinking"), chat);
        ArrayNode messages = chat.putArray("messages");
        system(body.get("system"), messages);
        conversation(body.get("messages"), messages);
        tools(body.get("tools"), chat);
        toolChoice(body.get("tool_choice"), chat);
        return chat;
    }

    private static void thinking(JsonNode t, ObjectNode chat) {
        if (t == null || t.isNull()) {
            return;
        }
        String type = t.path("type").asString("");
        switch (type) {
            case "disabled" -> {
            }
            case "enabled" -> {
                JsonNode budget = t.get("budget_tokens");
                if (budget == null || !budget.isIntegralNumber() || budget.intValue() < 1024) {
                    throw ApiException.invalid("thinking", "thinking.budget_tokens: must be an integer >= 1024");
                }
                // the chat request's switch (its effort names the budget's order of magnitude) and the budget
                // itself as the cap on reasoning tokens
                int b = budget.intValue();
                chat.put("reasoning_effort", b < 4096 ? "low" : b < 16384 ? "medium" : "high");
                chat.put("thinking_token_budget", b);
            }
            default -> throw ApiException.invalid("thinking", "thinking.type: must be enabled or disabled");
        }
    }

    private static void system(JsonNode s, ArrayNode messages) {
        if (s == null || s.isNull()) {
            return;
        }
        String text;
        if (s.isString()) {
            text = s.asString();
        } else if (s.isArray()) {
            text = text(s, "system");
        } else {
            throw ApiException.invalid("system", "system: must be a string or an array of text blocks");
        }
        messages.addObject().put("role", "system").put("content", text);
    }

    /** The text of an array of text blocks. */
    private static String text(JsonNode blocks, String p) {
        StringBuilder sb = new StringBuilder();
        for (int j = 0; j < blocks.size(); j++) {
            JsonNode b = blocks.get(j);
            String q = p + "." + j;
            String type = b.path("type").asString("");
            if (!type.equals("text")) {
                throw ApiException.invalid(q, q + ": " + (type.isEmpty() ? "a block needs a type"
                        : "'" + type + "' blocks are not supported here; this server takes text"));
            }
            if (!b.path("text").isString()) {
                throw ApiException.invalid(q + ".text", q + ".text: Field required");
            }
            sb.append(b.get("text").asString());
        }
        return sb.toString();
    }

    private static void conversation(JsonNode ms, ArrayNode out) {
        if (ms == null || ms.isNull()) {
            throw ApiException.invalid("messages", "messages: Field required");
        }
        if (!ms.isArray() || ms.isEmpty()) {
            throw ApiException.invalid("messages", "messages: must be a non-empty array");
        }
        for (int i = 0; i < ms.size(); i++) {
            JsonNode m = ms.get(i);
            String p = "messages." + i;
            if (!m.isObject()) {
                throw ApiException.invalid(p, p + ": must be an object");
            }
            String role = m.path("role").asString("");
            if (!role.equals("user") && !role.equals("assistant")) {
                throw ApiException.invalid(p + ".role", p + ".role: must be user or assistant");
            }
            JsonNode c = m.get("content");
            if (c == null || c.isNull()) {
                throw ApiException.invalid(p + ".content", p + ".content: Field required");
            }
            if (c.isString()) {
                out.addObject().put("role", role).put("content", c.asString());
            } else if (!c.isArray()) {
                throw ApiException.invalid(p + ".content", p + ".content: must be a string or an array of blocks");
            } else if (role.equals("user")) {
                user(c, p + ".content", out);
            } else {
                assistant(c, p + ".content", out);
            }
        }
    }

    /** A user turn: its tool results become tool messages (first, as they answer the turn before), then its text. */
    private static void user(JsonNode blocks, String p, ArrayNode out) {
        StringBuilder text = new StringBuilder();
        boolean hasText = false;
        for (int j = 0; j < blocks.size(); j++) {
            JsonNode b = blocks.get(j);
            String q = p + "." + j;
            switch (b.path("type").asString("")) {
                case "text" -> {
                    if (!b.path("text").isString()) {
                        throw ApiException.invalid(q + ".text", q + ".text: Field required");
                    }
                    text.append(b.get("text").asString());
                    hasText = true;
                }
                case "tool_result" -> {
                    if (!b.path("tool_use_id").isString()) {
                        throw ApiException.invalid(q + ".tool_use_id", q + ".tool_use_id: Field required");
                    }
                    JsonNode c = b.get("content");
                    String result = c == null || c.isNull() ? "" : c.isString() ? c.asString()
                            : c.isArray() ? text(c, q + ".content") : null;
                    if (result == null) {
                        throw ApiException.invalid(q + ".content", q + ".content: must be a string or text blocks");
                    }
                    if (b.path("is_error").asBoolean(false)) {
                        result = "Error: " + result;
                    }
                    out.addObject().put("role", "tool").put("tool_call_id", b.get("tool_use_id").asString())
                            .put("content", result);
                }
                case "thinking", "redacted_thinking" -> {
                }
                case "" -> throw ApiException.invalid(q + ".type", q + ".type: Field required");
                default -> throw unsupportedBlock(b, q);
            }
        }
        if (hasText) {
            out.addObject().put("role", "user").put("content", text.toString());
        }
    }

    /** An assistant turn: its text and its tool_use blocks as tool calls; thinking blocks are dropped. */
    private static void assistant(JsonNode blocks, String p, ArrayNode out) {
        StringBuilder text = new StringBuilder();
        ArrayNode calls = Wire.MAPPER.createArrayNode();
        for (int j = 0; j < blocks.size(); j++) {
            JsonNode b = blocks.get(j);
            String q = p + "." + j;
            switch (b.path("type").asString("")) {
                case "text" -> {
                    if (!b.path("text").isString()) {
                        throw ApiException.invalid(q + ".text", q + ".text: Field required");
                    }
                    text.append(b.get("text").asString());
                }
                case "tool_use" -> {
                    if (!b.path("id").isString() || !b.path("name").isString()) {
                        throw ApiException.invalid(q, q + ": a tool_use block needs id and name");
                    }
                    JsonNode input = b.get("input");
                    if (input != null && !input.isNull() && !input.isObject()) {
                        throw ApiException.invalid(q + ".input", q + ".input: must be an object");
                    }
                    ObjectNode call = calls.addObject().put("id", b.get("id").asString()).put("type", "function");
                    ObjectNode fn = call.putObject("function").put("name", b.get("name").asString());
                    fn.set("arguments", input == null || input.isNull() ? Wire.MAPPER.createObjectNode() : input);
                }
                case "thinking", "redacted_thinking" -> {
                }
                case "" -> throw ApiException.invalid(q + ".type", q + ".type: Field required");
                default -> throw unsupportedBlock(b, q);
            }
        }
        ObjectNode m = out.addObject().put("role", "assistant");
        if (calls.isEmpty()) {
            m.put("content", text.toString());
        } else {
            if (text.isEmpty()) {
                m.putNull("content");
            } else {
                m.put("content", text.toString());
            }
            m.set("tool_calls", calls);
        }
    }

    private static ApiException unsupportedBlock(JsonNode b, String q) {
        String type = b.path("type").asString("");
        return ApiException.invalid(q + ".type", q + ".type: '" + printable(type) + "' blocks are not supported"
                + (type.equals("image") || type.equals("document") ? "; this model takes text only" : ""));
    }

    private static void tools(JsonNode t, ObjectNode chat) {
        if (t == null || t.isNull()) {
            return;
        }
        if (!t.isArray()) {
            throw ApiException.invalid("tools", "tools: must be an array");
        }
        ArrayNode out = chat.putArray("tools");
        for (int i = 0; i < t.size(); i++) {
            JsonNode tool = t.get(i);
            String p = "tools." + i;
            String type = tool.path("type").asString("custom");
            if (!type.equals("custom")) {
                throw ApiException.invalid(p + ".type", p + ".type: server tool '" + printable(type)
                        + "' is not supported by this server; define a custom tool with name and input_schema");
            }
            if (!tool.path("name").isString() || tool.get("name").asString().isEmpty()) {
                throw ApiException.invalid(p + ".name", p + ".name: Field required");
            }
            JsonNode schema = tool.get("input_schema");
            if (schema == null || !schema.isObject()) {
                throw ApiException.invalid(p + ".input_schema", p + ".input_schema: must be a JSON schema object");
            }
            ObjectNode fn = out.addObject().put("type", "function").putObject("function");
            fn.put("name", tool.get("name").asString());
            if (tool.path("description").isString()) {
                fn.put("description", tool.get("description").asString());
            }
            fn.set("parameters", schema);
        }
    }

    private static void toolChoice(JsonNode tc, ObjectNode chat) {
        if (tc == null || tc.isNull()) {
            return;
        }
        String type = tc.path("type").asString("");
        switch (type) {
            case "auto" -> chat.put("tool_choice", "auto");
            case "any" -> chat.put("tool_choice", "required");
            case "none" -> chat.put("tool_choice", "none");
            case "tool" -> {
                if (!tc.path("name").isString()) {
                    throw ApiException.invalid("tool_choice", "tool_choice.name: Field required");
                }
                chat.putObject("tool_choice").put("type", "function").putObject("function")
                        .put("name", tc.get("name").asString());
            }
            default -> throw ApiException.invalid("tool_choice", "tool_choice.type: must be auto, any, tool or none");
        }
        JsonNode dp = tc.get("disable_parallel_tool_use");
        if (dp != null && dp.isBoolean() && dp.booleanValue()) {
            chat.put("parallel_tool_calls", false);
        }
    }

    private static boolean present(JsonNode body, String f) {
        JsonNode v = body.get(f);
        return v != null && !v.isNull();
    }

    private static void copy(JsonNode from, ObjectNode to, String name, String as) {
        JsonNode v = from.get(name);
        if (v != null) {
            to.set(as, v);
        }
    }

    /** Client text quoted in an error: at most 64 characters. */
    static String printable(String s) {
        return s.length() > 64 ? s.substring(0, 64) + "..." : s;
    }

    /** The error naming the Messages field that holds the chat request's field. */
    public static ApiException rename(ApiException e) {
        String to = e.param() == null ? null : PARAMS.get(e.param());
        if (to == null) {
            return e;
        }
        return new ApiException(e.status(), e.type(), to, e.code(), e.getMessage().replace(e.param(), to),
                e.retryAfter());
    }
}
