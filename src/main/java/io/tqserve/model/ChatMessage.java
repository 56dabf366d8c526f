package io.tqserve.model;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * One chat turn as a chat template sees it: {@code message['role']} and {@code message['content']}.
 *
 * @param role    {@code system}, {@code user}, {@code assistant}, ... (templates decide which they accept)
 * @param content the text of the turn
 */
public record ChatMessage(String role, String content) {

    public ChatMessage {
        Objects.requireNonNull(role, "role");
        Objects.requireNonNull(content, "content");
    }

    /** The message as a chat template receives it: {@code {"role": ..., "content": ...}}. */
    public Map<String, Object> asTemplateValue() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("role", role);
        m.put("content", content);
        return m;
    }

    /** Messages as a chat template receives them. */
    public static List<Map<String, Object>> asTemplateValues(List<ChatMessage> messages) {
        return messages.stream().map(ChatMessage::asTemplateValue).toList();
    }

    public static ChatMessage system(String content) {
        return new ChatMessage("system", content);
    }

    public static ChatMessage user(String content) {
        return new ChatMessage("user", content);
    }

    public static ChatMessage assistant(String content) {
        return new ChatMessage("assistant", content);
    }
}
