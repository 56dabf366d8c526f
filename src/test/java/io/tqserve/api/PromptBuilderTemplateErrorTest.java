package io.tqserve.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.tqserve.model.ChatMessage;
import io.tqserve.template.ChatTemplate;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpStatus;

/** How chat-template failures reach the client: 400 invalid_request_error on {@code messages}. */
class PromptBuilderTemplateErrorTest {

    private static final ChatTemplate NO_SYSTEM = ChatTemplate.compile("{% for m in messages %}"
            + "{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
            + "{{ m.content }}{% endfor %}", Map.of());

    @Test
    void raiseExceptionIsA400WithExactlyTheTemplatesMessage() {
        ApiException e = assertThrows(ApiException.class, () -> PromptBuilder.render(NO_SYSTEM,
                List.of(ChatMessage.system("s"), ChatMessage.user("u")), true));
        assertEquals(HttpStatus.BAD_REQUEST, e.status());
        assertEquals("messages", e.param());
        assertEquals("System role not supported", e.getMessage());
        assertEquals("u", PromptBuilder.render(NO_SYSTEM, List.of(ChatMessage.user("u")), true));
    }

    @Test
    void anyOtherTemplateErrorIsA400NamingPythonsMessageAndTheLine() {
        ChatTemplate broken = ChatTemplate.compile("{{ messages[0].content }}\n{{ messages[0].content + 1 }}",
                Map.of());
        ApiException e = assertThrows(ApiException.class,
                () -> PromptBuilder.render(broken, List.of(ChatMessage.user("u")), true));
        assertEquals(HttpStatus.BAD_REQUEST, e.status());
        assertEquals("the chat template failed on the messages: can only concatenate str (not \"int\") to str"
                + " (chat template line 2)", e.getMessage());
    }
}
