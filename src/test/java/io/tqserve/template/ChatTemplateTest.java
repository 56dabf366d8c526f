package io.tqserve.template;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.model.Tokenizer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ChatTemplateTest {

    private static final Path MODEL = Path.of("models/tiny-llama-h128");
    private static final Map<String, String> TOKENS = Map.of("bos_token", "<s>", "eos_token", "</s>");

    private static List<Map<String, Object>> user(String content) {
        return ChatTemplate.messages("user", content);
    }

    @Test
    void loadsTheEmbeddedModelsTemplateWithItsSpecialTokens() {
        ChatTemplate template = ChatTemplate.load(MODEL).orElseThrow();
        assertEquals("<|endoftext|>", template.specialTokens().get("bos_token"));
        assertEquals("<|endoftext|>", template.specialTokens().get("eos_token"));
        assertEquals("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
                template.render(ChatTemplate.messages("system", "Be brief.", "user", "Hi"), true));
        assertTrue(template.warnings().isEmpty(), template.warnings().toString());
    }

    @Test
    void renderedChatMlPromptTokenizesToImStartAndImEndIds() throws Exception {
        ChatTemplate template = ChatTemplate.load(MODEL).orElseThrow();
        try (Tokenizer tokenizer = Tokenizer.load(MODEL)) {
            int[] ids = tokenizer.encode(template.render(user("Hi"), true));
            assertEquals(1, ids[0]);
            assertEquals(2, ids[tokenizer.encode("<|im_start|>user\nHi").length]);
            assertEquals(1, ids[tokenizer.encode("<|im_start|>user\nHi<|im_end|>\n").length]);
        }
    }

    @Test
    void messageContentThatLooksLikeTemplateSyntaxIsNotEvaluated() {
        ChatTemplate template = ChatTemplate.compile("{% for m in messages %}{{ m.content }}|{% endfor %}", TOKENS);
        String content = "{{ 7 * 7 }} {% if true %}x{% endif %} {# c #} {{ raise_exception('no') }}";
        assertEquals(content + "|", template.render(user(content), false));
    }

    @Test
    void raiseExceptionInTheTemplateIsReportedAsRaisedByTemplateWithItsExactMessage() {
        ChatTemplate template = ChatTemplate.compile("{% for m in messages %}{% if m.role == 'system' %}"
                + "{{ raise_exception('System role not supported') }}{% endif %}{{ m.content }}{% endfor %}", TOKENS);
        assertEquals("Hi", template.render(user("Hi"), true));
        TemplateException e = assertThrows(TemplateException.class,
                () -> template.render(ChatTemplate.messages("system", "S", "user", "Hi"), true));
        assertTrue(e.raisedByTemplate());
        assertEquals("System role not supported", e.getMessage());
        assertEquals(1, e.line());
    }

    @Test
    void rejectsAtLoadATemplateUsingAnUnknownFilter() {
        TemplateException e = assertThrows(TemplateException.class,
                () -> ChatTemplate.compile("{% for m in messages %}{{ m.content | shout }}{% endfor %}", TOKENS));
        assertFalse(e.raisedByTemplate());
        assertEquals("No filter named 'shout'. (chat template line 1)", e.getMessage());
    }

    @Test
    void rejectsAtLoadATemplateUsingAnUnknownTagButRendersTransformersGenerationTag() {
        TemplateException e = assertThrows(TemplateException.class,
                () -> ChatTemplate.compile("{% for m in messages %}\n{% shout %}{{ m.content }}{% endshout %}"
                        + "{% endfor %}", TOKENS));
        assertEquals("Encountered unknown tag 'shout'. (chat template line 2)", e.getMessage());
        ChatTemplate generation = ChatTemplate.compile("{% for m in messages %}{% generation %}{{ m.content }}"
                + "{% endgeneration %}{% endfor %}", TOKENS);
        assertEquals("q", generation.render(user("q"), false));
    }

    @Test
    void aTemplateCallingAStringMethodPythonLacksLoadsWithAWarningAndFailsNamingTheLine() {
        ChatTemplate template = ChatTemplate.compile(
                "{% for m in messages %}\n{{ m.content.toUpperCase() }}{% endfor %}", TOKENS);
        assertTrue(template.warnings().stream().anyMatch(w -> w.startsWith("chat template renders no probe")
                && w.endsWith("'str object' has no attribute 'toUpperCase' (chat template line 2)")),
                template.warnings().toString());
        TemplateException e = assertThrows(TemplateException.class, () -> template.render(user("x"), true));
        assertEquals("'str object' has no attribute 'toUpperCase' (chat template line 2)", e.getMessage());
        assertEquals("UndefinedError", e.pythonType());
    }

    @Test
    void rejectsAtLoadATemplateWithASyntaxError() {
        TemplateException e = assertThrows(TemplateException.class,
                () -> ChatTemplate.compile("{% for m in messages %}{{ m.content + }}{% endfor %}", TOKENS));
        assertFalse(e.raisedByTemplate());
        assertEquals(1, e.line());
    }

    @Test
    void aTemplateThatDropsMessagesLoadsWithAWarningAndRendersAsPythonDoes() {
        ChatTemplate template = ChatTemplate.compile("{{ messages[-1].content }}", TOKENS);
        assertTrue(template.warnings().stream().anyMatch(w -> w.contains("drops the system message")),
                template.warnings().toString());
        assertEquals("b", template.render(ChatTemplate.messages("system", "a", "user", "b"), true));
    }

    @Test
    void loopFiltersAndForElseRenderAsInJinja2() {
        ChatTemplate filter = ChatTemplate.compile(
                "{% for m in messages if m.role != 'system' %}{{ loop.index }}{{ m.content }}{% endfor %}", TOKENS);
        assertEquals("1b2c", filter.render(ChatTemplate.messages("system", "a", "user", "b", "user", "c"), false));
        ChatTemplate forElse = ChatTemplate.compile("{% for m in messages if m.role == 'tool' %}{{ m.content }}"
                + "{% else %}none{% endfor %}", TOKENS);
        assertEquals("none", forElse.render(user("x"), false));
    }

    @Test
    void aTemplateThatRefusesEveryConversationLoadsWithAWarning() {
        ChatTemplate template = ChatTemplate.compile("{{ raise_exception('never') }}", TOKENS);
        assertEquals(List.of("chat template renders no probe conversation: never"), template.warnings());
    }

    @Test
    void passesExtraVariablesButNotReservedOnes() {
        ChatTemplate template = ChatTemplate.compile("{% for m in messages %}{{ m.content }}{% endfor %}"
                + "{% if enable_thinking is defined and enable_thinking is false %}/nothink{% endif %}", TOKENS);
        List<Map<String, Object>> chat = user("q");
        assertEquals("q/nothink", template.render(chat, null, true, Map.of("enable_thinking", false)));
        assertEquals("q", template.render(chat, true));
        assertThrows(IllegalArgumentException.class,
                () -> template.render(chat, null, true, Map.of("messages", List.of())));
    }

    @Test
    void strftimeNowFormatsTheInjectedClocksDateWithPythonDirectives() {
        ChatTemplate template = ChatTemplate.compile("{{ strftime_now('%Y-%m-%d|%d %b %Y|%-d %B|%A %H:%M') }}"
                + "{% for m in messages %}{{ m.content }}{% endfor %}", TemplateOptions.of(TOKENS).withClock(
                java.time.Clock.fixed(java.time.Instant.parse("2024-07-06T09:05:00Z"), java.time.ZoneOffset.UTC)));
        assertEquals("2024-07-06|06 Jul 2024|6 July|Saturday 09:05x", template.render(user("x"), false));
    }
}
