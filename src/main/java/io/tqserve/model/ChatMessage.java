package io.tqserve.model;

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
