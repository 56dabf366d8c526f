package io.tqserve.model;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/** TEMPORARY placeholder. */
public final class ChatTemplate {
    public static Optional<ChatTemplate> load(Path dir) {
        return Optional.empty();
    }

    public String render(List<ChatMessage> messages, boolean addGenerationPrompt) {
        throw new UnsupportedOperationException();
    }
}
