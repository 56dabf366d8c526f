package io.tqserve.template;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/**
 * One Jinja2 feature per template (precedence, tests, scoping, loops, macros, filters, methods, printing) against
 * what transformers' Jinja environment printed (goldens/templates/expected/semantics.json), plus the four defects
 * of the Jinjava-based renderer as regressions on the real templates of the corpus.
 */
class JinjaSemanticsTest {
    private static final ObjectMapper JSON = JsonMapper.builder().build();
    private static final Map<String, String> TOKENS = Map.of("bos_token", "<s>", "eos_token", "</s>");

    @TestFactory
    Stream<DynamicTest> everySingleFeatureTemplatePrintsWhatJinja2Prints() throws IOException {
        JsonNode doc = JSON.readTree(Path.of("goldens/templates/expected/semantics.json").toFile());
        List<Object> messages = JSON.convertValue(doc.path("messages"), new TypeReference<>() { });
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode c : doc.path("cases")) {
            String source = c.path("template").asString();
            tests.add(DynamicTest.dynamicTest(source, () -> {
                ChatTemplate t = ChatTemplate.compile(source, Map.of());
                assertEquals(c.path("expected").asString(), t.render(messages, false));
            }));
        }
        assertTrue(tests.size() >= 20);
        return tests.stream();
    }

    private static String render(String corpusTemplate, String conversation, boolean generationPrompt) {
        return ChatTemplateCorpusTest.template("corpus/templates/" + corpusTemplate + ".jinja").render(
                ChatTemplateCorpusTest.conversation(conversation, "messages"), null, generationPrompt, Map.of());
    }

    @Test
    void deepSeekR1DistillQwenKeepsItsGenerationPrompt() {
        // {% if not add_generation_prompt is defined %} is not (add_generation_prompt is defined) in Jinja2
        String out = render("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", "system_user", true);
        assertTrue(out.endsWith("<｜User｜>What is the capital of France?<｜Assistant｜><think>\n</think>"), out);
        assertTrue(render("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", "system_user", false)
                .endsWith("What is the capital of France?"));
    }

    @Test
    void llama32FindsStrftimeNowDefinedAndUsesTheClocksDate() {
        String out = render("meta-llama-Llama-3.2-3B-Instruct", "system_user", true);
        assertTrue(out.contains("Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n"), out);
    }

    @Test
    void mistralNemoLoadsAndAppliesItsLoopFilter() {
        ChatTemplate nemo = ChatTemplateCorpusTest.template("corpus/templates/mistralai-Mistral-Nemo-Instruct-2407.jinja");
        assertTrue(nemo.source().contains("{%- for key, val in tool.items() if key != \"return\" %}"));
        assertTrue(nemo.warnings().isEmpty(), nemo.warnings().toString());
        assertEquals("<s>[INST]Hi[/INST]Hello! How can I help?</s>[INST]You are terse.\n\nList three colors.[/INST]",
                render("mistralai-Mistral-Nemo-Instruct-2407", "multi_turn", true));
    }

    @Test
    void aTemplateDroppingSystemMessagesLoadsWithAWarningAndRendersAsPython() {
        // shaped like the templates of models without a system role that skip it instead of raising
        ChatTemplate t = ChatTemplate.compile("{{ bos_token }}{% for m in messages if m.role != 'system' %}"
                + "{{ '[INST] ' + m.content + ' [/INST]' if m.role == 'user' else m.content + eos_token }}"
                + "{% endfor %}", TOKENS);
        assertEquals(List.of("chat template drops the system message of a probe conversation; it is rendered as"
                + " Python's Jinja2 renders it"), t.warnings());
        assertEquals("<s>[INST] Hi [/INST]", t.render(ChatTemplate.messages("system", "S", "user", "Hi"), true));
    }

    @Test
    void pythonErrorsKeepPythonsMessageAndNameTheLine() {
        ChatTemplate t = ChatTemplate.compile("{% for m in messages %}\n{{ m.content + 1 }}{% endfor %}", Map.of());
        TemplateException e = assertThrows(TemplateException.class,
                () -> t.render(ChatTemplate.messages("user", "x"), false));
        assertEquals("TypeError", e.pythonType());
        assertEquals("can only concatenate str (not \"int\") to str", e.pythonMessage());
        assertEquals("can only concatenate str (not \"int\") to str (chat template line 2)", e.getMessage());
        TemplateException unsafe = assertThrows(TemplateException.class, () -> ChatTemplate.compile(
                "{% set xs = [] %}{{ xs.append(1) }}", Map.of()).render(List.of(), false));
        assertEquals("access to attribute 'append' of 'list' object is unsafe.", unsafe.pythonMessage());
    }

    @Test
    void toolsReachTheTemplateAsTransformersPassesThem() {
        ChatTemplate t = ChatTemplate.compile("{% for tool in tools %}{{ tool.function.name }}:{{ tool | tojson }}\n"
                + "{% endfor %}{% for m in messages %}{% for c in m.tool_calls or [] %}{{ c.function.name }}"
                + "{{ c.function.arguments | tojson }}{{ c.function.arguments.city }}{% endfor %}"
                + "{{ m.tool_call_id or '' }}{% endfor %}", Map.of());
        List<Object> tools = JSON.readValue("[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\","
                + " \"parameters\": {\"type\": \"object\"}}}]", new TypeReference<>() { });
        List<Object> messages = JSON.readValue("[{\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"id\":"
                + " \"c1\", \"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"arguments\":"
                + " {\"city\": \"Zürich\"}}}]}, {\"role\": \"tool\", \"tool_call_id\": \"c1\", \"content\": \"sunny\"}]",
                new TypeReference<>() { });
        String expected = "get_weather:{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": "
                + "{\"type\": \"object\"}}}\nget_weather{\"city\": \"Zürich\"}Zürichc1";
        assertEquals(expected, t.render(messages, tools, false, Map.of()));
        // a request's Jackson nodes can be passed as they are
        List<Object> toolNodes = new ArrayList<>();
        JSON.valueToTree(tools).forEach(toolNodes::add);
        List<Object> messageNodes = new ArrayList<>();
        JSON.valueToTree(messages).forEach(messageNodes::add);
        assertEquals(expected, t.render(messageNodes, toolNodes, false, Map.of()));
    }
}
