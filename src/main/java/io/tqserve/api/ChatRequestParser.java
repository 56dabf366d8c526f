package io.tqserve.api;

import io.tqserve.api.openai.Wire;
import io.tqserve.toolcall.Conversation;
import io.tqserve.toolcall.ToolSpec;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;

/**
 * The chat-only fields of a request: messages (with assistant tool calls and tool results), tools, tool_choice,
 * parallel_tool_calls, response_format, reasoning_effort and chat_template_kwargs; and the OpenAI fields that
 * would change the output but are not implemented, which are refused by name rather than ignored. Every string of
 * messages, tools, tool_choice and chat_template_kwargs (keys too) must be valid Unicode: an unpaired surrogate is
 * a 400 naming the field.
 */
final class ChatRequestParser {
    private static final Set<String> ROLES = Set.of("system", "developer", "user", "assistant", "tool");
    /** OpenAI fields that change the output and that this server does not implement (a non-null value is a 400). */
    static final List<String> UNSUPPORTED = List.of("audio", "prediction", "web_search_options", "functions",
            "function_call", "verbosity");
    /** reasoning_effort values (OpenAI's), passed to the chat template as transformers passes a keyword. */
    static final Set<String> EFFORTS = Set.of("none", "minimal", "low", "medium", "high");
    /** Template variables the renderer sets itself, which chat_template_kwargs may not name. */
    static final Set<String> RESERVED_KWARGS = Set.of("messages", "add_generation_prompt", "tools", "documents");

    private ChatRequestParser() {
    }

    static void rejectUnsupported(JsonNode body) {
        for (String f : UNSUPPORTED) {
            JsonNode v = body.get(f);
            if (v != null && !v.isNull()) {
                throw ApiException.invalid(f, "'" + f + "' is not supported by this server"
                        + (f.startsWith("function") ? "; use tools and tool_choice" : ""));
            }
        }
        JsonNode modalities = body.get("modalities");
        if (modalities != null && !modalities.isNull()) {
            boolean textOnly = modalities.isArray();
            for (JsonNode m : modalities) {
                textOnly &= m.isString() && m.asString().equals("text");
            }
            if (!textOnly) {
                throw ApiException.invalid("modalities", "modalities: only the \"text\" modality is supported");
            }
        }
    }

    /** The messages as the chat template receives them. */
    static List<Map<String, Object>> messages(JsonNode body, int maxMessages, int maxPromptChars) {
        JsonNode ms = body.get("messages");
        if (ms == null || ms.isNull()) {
            throw ApiException.invalid("messages", "messages is required");
        }
        if (!ms.isArray() || ms.isEmpty()) {
            throw ApiException.invalid("messages", "messages must be a non-empty array");
        }
        InputLimits.count(ms.size(), "messages", maxMessages);
        InputLimits.unicode(ms, "messages");
        long chars = 0;
        List<Map<String, Object>> turns = new ArrayList<>(ms.size());
        for (int i = 0; i < ms.size(); i++) {
            JsonNode m = ms.get(i);
            String p = "messages[" + i + "]";
            if (!m.isObject()) {
                throw ApiException.invalid(p, p + " must be an object");
            }
            JsonNode roleNode = m.get("role");
            if (roleNode == null || !roleNode.isString()) {
                throw ApiException.invalid(p + ".role", p + ".role is required");
            }
            String role = roleNode.asString();
            if (!ROLES.contains(role)) {
                throw ApiException.invalid(p + ".role", "unsupported role '" + RequestParser.printable(role)
                        + "' (supported: system, developer, user, assistant, tool)");
            }
            Map<String, Object> turn = new LinkedHashMap<>();
            turn.put("role", role.equals("developer") ? "system" : role);
            JsonNode calls = m.get("tool_calls");
            boolean hasCalls = role.equals("assistant") && calls != null && !calls.isNull();
            JsonNode c = m.get("content");
            String content = hasCalls && (c == null || c.isNull()) ? null
                    : InputLimits.text(RequestParser.content(c, p), p + ".content", maxPromptChars);
            chars += content == null ? 0 : content.length();
            if (chars > maxPromptChars) {
                throw InputLimits.tooLong("messages", chars, maxPromptChars);
            }
            turn.put("content", content);
            if (hasCalls) {
                turn.put("tool_calls", toolCalls(calls, p + ".tool_calls"));
            }
            if (role.equals("tool")) {
                JsonNode id = m.get("tool_call_id");
                if (id == null || !id.isString()) {
                    throw ApiException.invalid(p + ".tool_call_id", p + ".tool_call_id is required for role tool");
                }
                turn.put("tool_call_id", id.asString());
            }
            if (m.get("name") instanceof JsonNode n && n.isString()) {
                turn.put("name", n.asString());
            }
            turns.add(turn);
        }
        return turns;
    }

    private static List<Object> toolCalls(JsonNode calls, String p) {
        if (!calls.isArray()) {
            throw ApiException.invalid(p, p + " must be an array");
        }
        List<Object> out = new ArrayList<>();
        for (int j = 0; j < calls.size(); j++) {
            JsonNode call = calls.get(j);
            String q = p + "[" + j + "]";
            JsonNode fn = call.path("function");
            if (!fn.path("name").isString()) {
                throw ApiException.invalid(q + ".function.name", q + ".function.name is required");
            }
            JsonNode args = fn.get("arguments");
            Object parsed;
            if (args == null || args.isNull() || (args.isString() && args.asString().isBlank())) {
                parsed = new LinkedHashMap<>();
            } else if (args.isString()) {
                try {
                    parsed = plain(Wire.MAPPER.readTree(args.asString()));
                } catch (JacksonException e) {
                    throw ApiException.invalid(q + ".function.arguments", q
                            + ".function.arguments must be a JSON object text");
                }
            } else {
                parsed = plain(args);
            }
            if (!(parsed instanceof Map)) {
                throw ApiException.invalid(q + ".function.arguments", q + ".function.arguments must be a JSON object");
            }
            Map<String, Object> function = new LinkedHashMap<>();
            function.put("name", fn.get("name").asString());
            function.put("arguments", parsed);
            Map<String, Object> out1 = new LinkedHashMap<>();
            out1.put("id", call.path("id").isString() ? call.get("id").asString() : "call_" + j);
            out1.put("type", "function");
            out1.put("function", function);
            out.add(out1);
        }
        return out;
    }

    static ChatRequest chat(JsonNode body, List<Map<String, Object>> messages) {
        for (String f : List.of("tools", "tool_choice", "chat_template_kwargs")) {
            InputLimits.unicode(body.get(f), f);
        }
        List<Object> tools = new ArrayList<>();
        List<ToolSpec> specs = new ArrayList<>();
        JsonNode t = body.get("tools");
        if (t != null && !t.isNull()) {
            if (!t.isArray()) {
                throw ApiException.invalid("tools", "tools must be an array");
            }
            for (int i = 0; i < t.size(); i++) {
                String p = "tools[" + i + "]";
                JsonNode tool = t.get(i);
                if (!"function".equals(tool.path("type").asString(null))) {
                    throw ApiException.invalid(p + ".type", p + ".type must be \"function\"");
                }
                JsonNode fn = tool.path("function");
                if (!fn.path("name").isString() || fn.get("name").asString().isEmpty()) {
                    throw ApiException.invalid(p + ".function.name", p + ".function.name is required");
                }
                JsonNode params = fn.get("parameters");
                if (params != null && !params.isNull() && !params.isObject()) {
                    throw ApiException.invalid(p + ".function.parameters", p + ".function.parameters must be an "
                            + "object (a JSON schema)");
                }
                @SuppressWarnings("unchecked")
                Map<String, Object> schema = params == null || params.isNull() ? null
                        : (Map<String, Object>) plain(params);
                tools.add(plain(tool));
                specs.add(new ToolSpec(fn.get("name").asString(), schema == null
                        ? Map.of("type", "object") : schema));
            }
        }
        String choice = specs.isEmpty() ? "none" : "auto";
        String named = null;
        JsonNode tc = body.get("tool_choice");
        if (tc != null && !tc.isNull()) {
            if (tc.isString() && Set.of("none", "auto", "required").contains(tc.asString())) {
                choice = tc.asString();
            } else if (tc.isObject() && tc.path("function").path("name").isString()) {
                choice = "function";
                named = tc.get("function").get("name").asString();
                String n = named;
                if (specs.stream().noneMatch(s -> s.name().equals(n))) {
                    throw ApiException.invalid("tool_choice", "tool_choice names function '"
                            + RequestParser.printable(named) + "', which is not in tools");
                }
            } else {
                throw ApiException.invalid("tool_choice", "tool_choice must be none, auto, required or "
                        + "{\"type\": \"function\", \"function\": {\"name\": ...}}");
            }
            if (specs.isEmpty() && !choice.equals("none")) {
                throw ApiException.invalid("tool_choice", "tool_choice '" + choice + "' needs tools");
            }
        }
        JsonNode par = body.get("parallel_tool_calls");
        if (par != null && !par.isNull() && !par.isBoolean()) {
            throw ApiException.invalid("parallel_tool_calls", "parallel_tool_calls must be a boolean");
        }
        boolean parallel = par == null || par.isNull() || par.booleanValue();
        ChatRequest.ResponseFormat format = responseFormat(body.get("response_format"));
        if (format.constrained() && !specs.isEmpty() && !choice.equals("none")) {
            throw ApiException.invalid("response_format", "response_format " + format.type() + " cannot be combined "
                    + "with tools unless tool_choice is none");
        }
        Conversation conversation = new Conversation(messages, tools.isEmpty() ? null : tools, templateKwargs(body));
        Integer budget = null;
        JsonNode b = body.get("thinking_token_budget");
        if (b != null && !b.isNull()) {
            if (!b.isIntegralNumber() || !b.canConvertToInt() || b.intValue() < 0) {
                throw ApiException.invalid("thinking_token_budget", "thinking_token_budget must be an integer >= 0");
            }
            budget = b.intValue();
        }
        return new ChatRequest(conversation, specs, choice, named, parallel, format, budget);
    }

    /**
     * The extra template variables: chat_template_kwargs (vLLM's field, e.g. {@code {"enable_thinking": false}})
     * and reasoning_effort, which transformers and vLLM pass to the template as a keyword of that name.
     */
    static Map<String, Object> templateKwargs(JsonNode body) {
        Map<String, Object> kwargs = new LinkedHashMap<>();
        JsonNode k = body.get("chat_template_kwargs");
        if (k != null && !k.isNull()) {
            if (!k.isObject()) {
                throw ApiException.invalid("chat_template_kwargs", "chat_template_kwargs must be an object");
            }
            for (Map.Entry<String, JsonNode> e : k.properties()) {
                if (RESERVED_KWARGS.contains(e.getKey())) {
                    throw ApiException.invalid("chat_template_kwargs", "chat_template_kwargs may not set '"
                            + e.getKey() + "': the server sets it");
                }
                kwargs.put(e.getKey(), plain(e.getValue()));
            }
        }
        JsonNode effort = body.get("reasoning_effort");
        if (effort != null && !effort.isNull()) {
            if (!effort.isString() || !EFFORTS.contains(effort.asString())) {
                throw ApiException.invalid("reasoning_effort", "reasoning_effort must be one of none, minimal, "
                        + "low, medium or high");
            }
            kwargs.putIfAbsent("reasoning_effort", effort.asString());
        }
        return kwargs;
    }

    @SuppressWarnings("unchecked")
    private static ChatRequest.ResponseFormat responseFormat(JsonNode rf) {
        if (rf == null || rf.isNull()) {
            return ChatRequest.ResponseFormat.TEXT;
        }
        String type = rf.path("type").asString(null);
        if (type == null) {
            throw ApiException.invalid("response_format.type", "response_format.type is required");
        }
        return switch (type) {
            case "text" -> ChatRequest.ResponseFormat.TEXT;
            case "json_object" -> new ChatRequest.ResponseFormat("json_object", null, null, false);
            case "json_schema" -> {
                JsonNode js = rf.path("json_schema");
                JsonNode schema = js.get("schema");
                if (schema == null || !schema.isObject()) {
                    throw ApiException.invalid("response_format.json_schema.schema",
                            "response_format.json_schema.schema must be a JSON schema object");
                }
                yield new ChatRequest.ResponseFormat("json_schema", (Map<String, Object>) plain(schema),
                        js.path("name").asString(null), js.path("strict").asBoolean(false));
            }
            default -> throw ApiException.invalid("response_format.type", "response_format.type must be text, "
                    + "json_object or json_schema");
        };
    }

    /** A JSON tree as plain Java values (LinkedHashMap, ArrayList, String, Number, Boolean, null). */
    static Object plain(JsonNode n) {
        return Wire.MAPPER.convertValue(n, Object.class);
    }
}
