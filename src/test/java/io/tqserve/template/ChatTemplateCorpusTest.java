package io.tqserve.template;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/**
 * The corpus of published chat templates (goldens/templates/corpus, provenance in its README) rendered with every
 * conversation of conversations.json, compared with what transformers' render_jinja_template produced
 * (generate_expected.py): byte for byte, or the same exception message where Python raised.
 */
class ChatTemplateCorpusTest {
    static final Path CORPUS = Path.of("goldens/templates/corpus");
    private static final ObjectMapper JSON = JsonMapper.builder().build();

    @TestFactory
    Stream<DynamicNode> everyCorpusTemplateRendersEveryConversationAsTransformers() throws IOException {
        List<DynamicNode> templates = new ArrayList<>();
        int rendered = 0;
        int wellCovered = 0;
        try (Stream<Path> files = Files.list(CORPUS.resolve("expected"))) {
            for (Path file : files.sorted().toList()) {
                JsonNode doc = JSON.readTree(file.toFile());
                List<DynamicTest> cases = new ArrayList<>();
                int ok = 0;
                for (JsonNode c : doc.path("cases")) {
                    ok += c.has("expected") ? 1 : 0;
                    String name = c.path("conversation").asString()
                            + (c.path("add_generation_prompt").asBoolean() ? " +gen" : "")
                            + (c.path("variables").isEmpty() ? "" : " " + c.path("variables"));
                    cases.add(DynamicTest.dynamicTest(name, () -> check(doc, c)));
                }
                rendered += ok;
                wellCovered += ok >= 8 ? 1 : 0;
                templates.add(DynamicContainer.dynamicContainer(file.getFileName().toString(), cases));
            }
        }
        assertTrue(templates.size() >= 40, "corpus has " + templates.size() + " templates");
        assertTrue(wellCovered >= 40, "only " + wellCovered + " templates render >= 8 conversations in Python");
        assertTrue(rendered >= 40 * 8, "rendered cases: " + rendered);
        return templates.stream();
    }

    private static final Map<String, ChatTemplate> COMPILED = new java.util.concurrent.ConcurrentHashMap<>();

    static ChatTemplate template(String relative) {
        return COMPILED.computeIfAbsent(relative, r -> {
            try {
                return ChatTemplate.compile(Files.readString(Path.of("goldens/templates").resolve(r)),
                        TemplateOptions.of(Map.of("bos_token", "<s>", "eos_token", "</s>"))
                                .withClock(ChatTemplateGoldenTest.GoldenCases.CLOCK));
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
    }

    private static JsonNode conversations;

    static synchronized List<Object> conversation(String name, String field) {
        if (conversations == null) {
            conversations = JSON.readTree(Path.of("goldens/templates/conversations.json").toFile());
        }
        for (JsonNode c : conversations.path("conversations")) {
            if (c.path("name").asString().equals(name)) {
                return c.path(field).isArray() ? JSON.convertValue(c.path(field), new TypeReference<>() { }) : null;
            }
        }
        throw new IllegalArgumentException("no conversation " + name);
    }

    private static void check(JsonNode doc, JsonNode c) throws IOException {
        ChatTemplate template = template(doc.path("template").asString());
        String conv = c.path("conversation").asString();
        List<Object> messages = conversation(conv, "messages");
        List<Object> tools = conversation(conv, "tools");
        boolean agp = c.path("add_generation_prompt").asBoolean();
        Map<String, Object> variables = JSON.convertValue(c.path("variables"), new TypeReference<>() { });
        if (c.has("error")) {
            TemplateException e = assertThrows(TemplateException.class,
                    () -> template.render(messages, tools, agp, variables));
            assertEquals(c.path("error").asString(), e.pythonMessage(), e.getMessage());
            assertEquals(c.path("error_type").asString().equals("TemplateError"), e.raisedByTemplate());
            return;
        }
        assertEquals(c.path("expected").asString(), template.render(messages, tools, agp, variables));
    }
}
