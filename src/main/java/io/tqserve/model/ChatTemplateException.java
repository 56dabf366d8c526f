package io.tqserve.model;

/**
 * A chat template that cannot be used ({@link #raisedByTemplate()} false: rejected at load, or a rendering error)
 * or a conversation the template itself refused through {@code raise_exception} ({@link #raisedByTemplate()} true,
 * e.g. "Conversation roles must alternate user/assistant/user/assistant/..." — a client error).
 */
public final class ChatTemplateException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final boolean raisedByTemplate;

    ChatTemplateException(String message, boolean raisedByTemplate) {
        super(message);
        this.raisedByTemplate = raisedByTemplate;
    }

    ChatTemplateException(String message, Throwable cause) {
        super(message, cause);
        this.raisedByTemplate = false;
    }

    /** True when the template's own {@code raise_exception(...)} rejected the conversation. */
    public boolean raisedByTemplate() {
        return raisedByTemplate;
    }
}
