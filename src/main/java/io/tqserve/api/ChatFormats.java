package io.tqserve.api;

import io.tqserve.model.Model;
import io.tqserve.template.TemplateException;
import io.tqserve.toolcall.ChatFormat;
import io.tqserve.toolcall.Conversation;
import java.util.Map;
import java.util.WeakHashMap;

/**
 * The {@link ChatFormat} of each served model (built on first use, then kept as long as the model is), and the one
 * way every endpoint renders a conversation: {@link #render}.
 */
final class ChatFormats {
    private static final Map<Model, ChatFormat> FORMATS = new WeakHashMap<>();

    private ChatFormats() {
    }

    static ChatFormat of(Model model) {
        synchronized (FORMATS) {
            return FORMATS.computeIfAbsent(model, m -> ChatFormat.of(m.chatTemplate(), m.tokenizer()));
        }
    }

    /**
     * Renders and tokenizes a chat request's conversation. Its tools go to the template when it has some (a 400
     * if the template cannot render tools); a conversation the template refuses through {@code raise_exception}
     * is a 400 with exactly the template's message (as Python raises it), any other template error a 400 naming
     * the error and the template line.
     */
    static ChatFormat.Prompt render(ChatFormat format, ChatRequest chat, boolean addGenerationPrompt,
            ApiSettings settings) {
        if (format.template() == null) {
            throw ApiException.invalid("messages", "the served model has no chat template; use /v1/completions");
        }
        Conversation c = chat.conversation();
        if (c.tools() != null && format.tools().isEmpty()) {
            throw ApiException.invalid("tools", "the chat template of the served model cannot render tools (it has"
                    + " no tool-call format: Hermes <tool_call>, Llama 3.1 JSON or Mistral [TOOL_CALLS])");
        }
        try {
            return format.render(c, addGenerationPrompt, settings.specialTokensInContent());
        } catch (TemplateException e) {
            throw ApiException.invalid("messages", e.raisedByTemplate() ? e.getMessage()
                    : "the chat template failed on the messages: " + e.getMessage());
        } catch (IllegalArgumentException e) {
            throw ApiException.invalid("chat_template_kwargs", "the chat template cannot take these values: "
                    + e.getMessage());
        }
    }
}
