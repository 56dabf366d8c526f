package io.tqserve.toolcall;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A chat conversation parsed once from a request, as the chat template renders it: every endpoint that renders a
 * conversation (chat completions, {@code /tokenize}, the Responses and Messages APIs) builds one and renders it
 * through {@link ChatFormat#render}.
 *
 * @param messages       message maps as transformers' {@code apply_chat_template} takes them: {@code role},
 *                       {@code content} (a string, or null for an assistant turn with tool calls),
 *                       {@code tool_calls} (each {@code {"id", "type": "function", "function": {"name",
 *                       "arguments": {...}}}}, arguments parsed into a map), {@code tool_call_id}, {@code name}
 * @param tools          the tools passed to the template ({@code {"type": "function", "function": {...}}} maps),
 *                       or null to render without tools ({@code tools=None})
 * @param templateKwargs extra template variables ({@code chat_template_kwargs}, {@code reasoning_effort}),
 *                       passed as transformers passes {@code **kwargs}
 */
public record Conversation(List<Map<String, Object>> messages, List<Object> tools, Map<String, Object> templateKwargs) {
    public Conversation {
        messages = List.copyOf(messages);
        tools = tools == null ? null : List.copyOf(tools);
        templateKwargs = Collections.unmodifiableMap(new LinkedHashMap<>(templateKwargs));
    }

    /** The same conversation rendered without tools. */
    public Conversation withoutTools() {
        return new Conversation(messages, null, templateKwargs);
    }
}
