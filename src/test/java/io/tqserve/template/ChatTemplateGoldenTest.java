package io.tqserve.template;

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
 * with transformers' own Jinja environment and render call) and compares the prompt byte for byte; where Python
 * raised, the same message is expected.
 */
class ChatTemplateGoldenTest {

    static final Path GOLDENS = Path.of("goldens/templates");
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
        ChatTemplate template = templates.computeIfAbsent(c.path("template").asString(),
                n -> GoldenCases.template(c.path("config").asString()));
        GoldenCases.check(template, c, GOLDENS);
    }

    /** Shared by the golden and corpus tests: one case of an index.json against its expected bytes or error. */
    static final class GoldenCases {
        static final java.time.Clock CLOCK = java.time.Clock.fixed(java.time.Instant.parse("2024-07-26T10:30:00Z"),
                java.time.ZoneOffset.UTC);

        static ChatTemplate template(String config) {
            TemplateOptions options = TemplateOptions.of(Map.of("bos_token", "<s>", "eos_token", "</s>"))
                    .withClock(CLOCK);
            try {
                return config.endsWith(".jinja") ? ChatTemplate.compile(Files.readString(Path.of(config)), options)
                        : ChatTemplate.fromTokenizerConfig(Path.of(config), options);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }

        static void check(ChatTemplate template, JsonNode c, Path root) throws IOException {
            List<Object> messages = JSON.convertValue(c.path("messages"), new TypeReference<>() { });
            List<Object> tools = c.path("tools").isArray() ? JSON.convertValue(c.path("tools"),
                    new TypeReference<>() { }) : null;
            boolean generationPrompt = c.path("add_generation_prompt").asBoolean();
            Map<String, Object> variables = JSON.convertValue(c.path("variables"), new TypeReference<>() { });
            if (c.has("error")) {
                TemplateException e = assertThrows(TemplateException.class,
                        () -> template.render(messages, tools, generationPrompt, variables));
                String type = c.path("error_type").asString("TemplateError");
                assertEquals(c.path("error").asString(), e.pythonMessage(), e.getMessage());
                assertEquals(type.equals("TemplateError"), e.raisedByTemplate(), e.getMessage());
                return;
            }
            byte[] expected = Files.readAllBytes(root.resolve(c.path("expected").asString()));
            String rendered = template.render(messages, tools, generationPrompt, variables);
            if (!Arrays.equals(expected, rendered.getBytes(StandardCharsets.UTF_8))) {
                // Keep the rendering for a diff against the golden file.
                Path actual = Path.of("target/template-actual").resolve(c.path("expected").asString());
                Files.createDirectories(actual.getParent());
                Files.writeString(actual, rendered, StandardCharsets.UTF_8);
            }
            assertEquals(new String(expected, StandardCharsets.UTF_8), rendered);
            assertArrayEquals(expected, rendered.getBytes(StandardCharsets.UTF_8));
        }
    }
}
