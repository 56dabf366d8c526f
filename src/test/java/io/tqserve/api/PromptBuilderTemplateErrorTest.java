package io.tqserve.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.tqserve.model.Tokenizer;
import io.tqserve.template.ChatTemplate;
import io.tqserve.toolcall.ChatFormat;
import io.tqserve.toolcall.Conversation;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpStatus;

/** How chat-template failures reach the client: 400 invalid_request_error on {@code messages}. */
class PromptBuilderTemplateErrorTest {
    private static final ChatTemplate NO_SYSTEM = ChatTemplate.compile("{% for m in messages %}"
            + "{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
            + "{{ m.content }}{% endfor %}", Map.of());
    private static final ApiSettings SETTINGS = new ApiSettings(List.of(), false, 512, Duration.ofSeconds(5),
            Duration.ofSeconds(1));
    private static Tokenizer tokenizer;

    @BeforeAll
    static void load() throws Exception {
        tokenizer = Tokenizer.load(Path.of("models/tiny-llama-h128"));
    }

    @AfterAll
    static void close() {
        tokenizer.close();
    }

    static ChatRequest chat(Map<String, Object>... messages) {
        return new ChatRequest(new Conversation(List.of(messages), null, Map.of()), List.of(), "none", null, true,
                ChatRequest.ResponseFormat.TEXT, null);
    }

    static String render(ChatTemplate t, ChatRequest chat) {
        return ChatFormats.render(ChatFormat.of(t, tokenizer), chat, true, SETTINGS).text();
    }

    @Test
    void raiseExceptionIsA400WithExactlyTheTemplatesMessage() {
        ApiException e = assertThrows(ApiException.class, () -> render(NO_SYSTEM,
                chat(ChatTemplate.message("system", "s"), ChatTemplate.message("user", "u"))));
        assertEquals(HttpStatus.BAD_REQUEST, e.status());
        assertEquals("messages", e.param());
        assertEquals("System role not supported", e.getMessage());
        assertEquals("u", render(NO_SYSTEM, chat(ChatTemplate.message("user", "u"))));
    }

    @Test
    void anyOtherTemplateErrorIsA400NamingPythonsMessageAndTheLine() {
        ChatTemplate broken = ChatTemplate.compile("{{ messages[0].content }}\n{{ messages[0].content + 1 }}",
                Map.of());
        ApiException e = assertThrows(ApiException.class,
                () -> render(broken, chat(ChatTemplate.message("user", "u"))));
        assertEquals(HttpStatus.BAD_REQUEST, e.status());
        assertEquals("the chat template failed on the messages: can only concatenate str (not \"int\") to str"
                + " (chat template line 2)", e.getMessage());
    }
}
