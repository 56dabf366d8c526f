package io.tqserve.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/**
 * Renders every case of goldens/templates/expected/index.json (written by goldens/templates/generate_expected.py
 * with Python Jinja2, configured as transformers' apply_chat_template) and compares the prompt byte for byte.
 */
class ChatTemplateGoldenTest {

    private static final Path GOLDENS = Path.of("goldens/templates");
    private static final ObjectMapper JSON = JsonMapper.builder().build();

    private final Map<String, ChatTemplate> templates = new HashMap<>();

    @TestFactory
    Stream<DynamicTest> rendersEveryGoldenCaseExactlyAsPythonJinja2() throws IOException {
        JsonNode index = JSON.readTree(GOLDENS.resolve("expected/index.json").toFile());
        List<DynamicTest> tests = new ArrayList<>();
        for (JsonNode c : index.path("cases")) {
            String name = c.path("template").asString() + "/" + c.path("conversation").asString()
                    + (c.path("add_generation_prompt").asBoolean() ? " +gen" : "")
                    + (c.path("variables").isEmpty() ? "" : " " + c.path("variables").propertyNames());
            tests.add(DynamicTest.dynamicTest(name, () -> check(c)));
        }
        assertTrue(tests.size() >= 40, "expected the full golden set, found " + tests.size());
        return tests.stream();
    }

    private void check(JsonNode c) throws IOException {
        ChatTemplate template = template(c.path("template").asString(), c.path("config").asString());
        List<ChatMessage> messages = new ArrayList<>();
        for (JsonNode m : c.path("messages")) {
            messages.add(new ChatMessage(m.path("role").asString(), m.path("content").asString()));
        }
        boolean generationPrompt = c.path("add_generation_prompt").asBoolean();
        Map<String, Object> variables = JSON.convertValue(c.path("variables"), new TypeReference<>() { });
        if (c.has("error")) {
            ChatTemplateException e = assertThrows(ChatTemplateException.class,
                    () -> template.render(messages, generationPrompt, variables));
            assertTrue(e.raisedByTemplate(), e.getMessage());
            assertEquals(c.path("error").asString(), e.getMessage());
            return;
        }
        byte[] expected = Files.readAllBytes(GOLDENS.resolve(c.path("expected").asString()));
        String rendered = template.render(messages, generationPrompt, variables);
        if (!Arrays.equals(expected, rendered.getBytes(StandardCharsets.UTF_8))) {
            // Keep the rendering for a diff against the golden file.
            Path actual = Path.of("target/template-actual").resolve(c.path("expected").asString());
            Files.createDirectories(actual.getParent());
            Files.writeString(actual, rendered, StandardCharsets.UTF_8);
        }
        assertEquals(new String(expected, StandardCharsets.UTF_8), rendered);
        assertArrayEquals(expected, rendered.getBytes(StandardCharsets.UTF_8));
    }

    private ChatTemplate template(String name, String config) throws IOException {
        ChatTemplate cached = templates.get(name);
        if (cached != null) {
            return cached;
        }
        Path path = Path.of(config);
        ChatTemplate t = config.endsWith(".jinja")
                ? ChatTemplate.of(Files.readString(path), Map.of("bos_token", "<s>", "eos_token", "</s>"))
                : ChatTemplate.fromTokenizerConfig(path);
        templates.put(name, t);
        return t;
    }
}
