package io.tqserve.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ChatTemplateTest {

    private static final Path MODEL = Path.of("models/tiny-llama-h128");
    private static final Map<String, String> TOKENS = Map.of("bos_token", "<s>", "eos_token", "</s>");

    @Test
    void loadsTheEmbeddedModelsTemplateWithItsSpecialTokens() throws Exception {
        ChatTemplate template = ChatTemplate.load(MODEL).orElseThrow();
        assertEquals("<|endoftext|>", template.specialTokens().get("bos_token"));
        assertEquals("<|endoftext|>", template.specialTokens().get("eos_token"));
        assertEquals("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
                template.render(List.of(ChatMessage.system("Be brief."), ChatMessage.user("Hi")), true));
    }

    @Test
    void renderedChatMlPromptTokenizesToImStartAndImEndIds() throws Exception {
        ChatTemplate template = ChatTemplate.load(MODEL).orElseThrow();
        try (Tokenizer tokenizer = Tokenizer.load(MODEL)) {
            int[] ids = tokenizer.encode(template.render(List.of(ChatMessage.user("Hi")), true));
            assertEquals(1, ids[0]);
            assertEquals(2, ids[tokenizer.encode("<|im_start|>user\nHi").length]);
            assertEquals(1, ids[tokenizer.encode("<|im_start|>user\nHi<|im_end|>\n").length]);
        }
    }

    @Test
    void messageContentThatLooksLikeTemplateSyntaxIsNotEvaluated() {
        ChatTemplate template = ChatTemplate.of("{% for m in messages %}{{ m.content }}|{% endfor %}", TOKENS);
        String content = "{{ 7 * 7 }} {% if true %}x{% endif %} {# c #} {{ raise_exception('no') }}";
        assertEquals(content + "|", template.render(List.of(ChatMessage.user(content)), false));
    }

    @Test
    void raiseExceptionInTheTemplateIsReportedAsRaisedByTemplate() {
        ChatTemplate template = ChatTemplate.of("{% for m in messages %}{% if m.role == 'system' %}"
                + "{{ raise_exception('System role not supported') }}{% endif %}{{ m.content }}{% endfor %}", TOKENS);
        assertEquals("Hi", template.render(List.of(ChatMessage.user("Hi")), true));
        ChatTemplateException e = assertThrows(ChatTemplateException.class,
                () -> template.render(List.of(ChatMessage.system("S"), ChatMessage.user("Hi")), true));
        assertTrue(e.raisedByTemplate());
        assertEquals("System role not supported", e.getMessage());
    }

    @Test
    void rejectsAtLoadATemplateUsingAnUnknownFilter() {
        ChatTemplateException e = assertThrows(ChatTemplateException.class,
                () -> ChatTemplate.of("{% for m in messages %}{{ m.content | shout }}{% endfor %}", TOKENS));
        assertFalse(e.raisedByTemplate());
        assertTrue(e.getMessage().contains("shout"), e.getMessage());
    }

    @Test
    void rejectsAtLoadATemplateUsingAnUnknownTag() {
        ChatTemplateException e = assertThrows(ChatTemplateException.class,
                () -> ChatTemplate.of("{% for m in messages %}{% generation %}{{ m.content }}{% endgeneration %}"
                        + "{% endfor %}", TOKENS));
        assertTrue(e.getMessage().contains("generation"), e.getMessage());
    }

    @Test
    void rejectsAtLoadATemplateCallingAStringMethodPythonLacks() {
        ChatTemplateException e = assertThrows(ChatTemplateException.class,
                () -> ChatTemplate.of("{% for m in messages %}{{ m.content.toUpperCase() }}{% endfor %}", TOKENS));
        assertTrue(e.getMessage().contains("toUpperCase"), e.getMessage());
    }

    @Test
    void rejectsAtLoadATemplateWithASyntaxError() {
        ChatTemplateException e = assertThrows(ChatTemplateException.class,
                () -> ChatTemplate.of("{% for m in messages %}{{ m.content + }}{% endfor %}", TOKENS));
        assertFalse(e.raisedByTemplate());
    }

    @Test
    void rejectsAtLoadATemplateThatDropsConversationTurns() {
        ChatTemplateException e = assertThrows(ChatTemplateException.class,
                () -> ChatTemplate.of("{{ messages[-1].content }}", TOKENS));
        assertTrue(e.getMessage().contains("lost"), e.getMessage());
    }

    @Test
    void rejectsAtLoadLoopFiltersAndForElseWhichJinjavaWouldIgnore() {
        ChatTemplateException filter = assertThrows(ChatTemplateException.class,
                () -> ChatTemplate.of("{% for m in messages if m.role != 'system' %}{{ m.content }}{% endfor %}",
                        TOKENS));
        assertTrue(filter.getMessage().contains("for-loop filter"), filter.getMessage());
        ChatTemplateException forElse = assertThrows(ChatTemplateException.class,
                () -> ChatTemplate.of("{% for m in messages %}{% if m %}{{ m.content }}{% else %}-{% endif %}"
                        + "{% else %}empty{% endfor %}", TOKENS));
        assertTrue(forElse.getMessage().contains("else"), forElse.getMessage());
        // an {% else %} of an if inside a for is fine
        ChatTemplate.of("{% for m in messages %}{% if m %}{{ m.content }}{% else %}-{% endif %}{% endfor %}", TOKENS);
    }

    @Test
    void rejectsATemplateThatRefusesEveryConversation() {
        ChatTemplateException e = assertThrows(ChatTemplateException.class,
                () -> ChatTemplate.of("{{ raise_exception('never') }}", TOKENS));
        assertTrue(e.getMessage().contains("never"), e.getMessage());
    }

    @Test
    void passesExtraVariablesButNotReservedOnes() {
        ChatTemplate template = ChatTemplate.of("{% for m in messages %}{{ m.content }}{% endfor %}"
                + "{% if enable_thinking is defined and enable_thinking is false %}/nothink{% endif %}", TOKENS);
        List<ChatMessage> chat = List.of(ChatMessage.user("q"));
        assertEquals("q/nothink", template.render(chat, true, Map.of("enable_thinking", false)));
        assertEquals("q", template.render(chat, true));
        assertThrows(IllegalArgumentException.class, () -> template.render(chat, true, Map.of("messages", List.of())));
    }

    @Test
    void strftimeNowFormatsTheCurrentDateWithPythonDirectives() {
        ChatTemplate template = ChatTemplate.of("{{ strftime_now('%Y-%m-%d') }}"
                + "{% for m in messages %}{{ m.content }}{% endfor %}", TOKENS);
        String out = template.render(List.of(ChatMessage.user("x")), false);
        assertTrue(out.matches("\\d{4}-\\d{2}-\\d{2}x"), out);
    }
}
