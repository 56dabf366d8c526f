package io.tqserve.toolcall;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.template.ChatTemplate;
import io.tqserve.template.TemplateOptions;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The parsers on assistant outputs rendered by the real Qwen3, Llama 3.1 (JSON tool calling), Mistral Small 3.1
 * and embedded-model templates, and a template in the layout of Mistral's tokenizer v11 ([TOOL_CALLS]name[ARGS]) (goldens/toolcalls, generated with Python Jinja2): fed whole and in 3-character
 * pieces, each recovers exactly the calls, content and reasoning the output was rendered from, and no markup
 * reaches the content.
 */
class ToolCallGoldenTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final Path DIR = Path.of("goldens/toolcalls");

    static String source(String template) throws Exception {
        return switch (template) {
            case "qwen3" -> JSON.readTree(Path.of("goldens/templates/sources/qwen3/tokenizer_config.json").toFile())
                    .get("chat_template").asString();
            case "tiny-llama-h128" -> JSON.readTree(Path.of("models/tiny-llama-h128/tokenizer_config.json").toFile())
                    .get("chat_template").asString();
            default -> Files.readString(DIR.resolve("sources/" + template + ".jinja"));
        };
    }

    static Stream<Arguments> cases() throws Exception {
        List<Arguments> out = new ArrayList<>();
        for (JsonNode c : JSON.readTree(DIR.resolve("expected.json").toFile())) {
            out.add(Arguments.of(c.get("case").asString() + "/" + c.get("template").asString(), c));
        }
        return out.stream();
    }

    /**
     * What the pieces say: content, reasoning, the complete calls, and per call the streamed pieces (its start,
     * then its argument fragments, concatenated; and how many fragments there were).
     */
    record Result(String content, String reasoning, List<ToolCall> calls, List<String> streamedNames,
            List<String> streamedArguments, List<Integer> fragments) {
    }

    static Result parse(ChatOutputParser p, String output, int piece) {
        List<ChatOutputParser.Piece> all = new ArrayList<>();
        for (int i = 0; i < output.length(); i += piece) {
            all.addAll(p.feed(output.substring(i, Math.min(output.length(), i + piece))));
        }
        all.addAll(p.finish());
        StringBuilder content = new StringBuilder();
        StringBuilder reasoning = new StringBuilder();
        List<String> names = new ArrayList<>();
        List<StringBuilder> args = new ArrayList<>();
        List<Integer> fragments = new ArrayList<>();
        for (ChatOutputParser.Piece x : all) {
            switch (x) {
                case ChatOutputParser.Content c -> content.append(c.text());
                case ChatOutputParser.Reasoning r -> reasoning.append(r.text());
                case ChatOutputParser.CallStart c -> {
                    assertThat(c.index()).isEqualTo(names.size());
                    names.add(c.name());
                    args.add(new StringBuilder());
                    fragments.add(0);
                }
                case ChatOutputParser.CallArguments a -> {
                    assertThat(a.index()).isEqualTo(names.size() - 1);
                    args.get(a.index()).append(a.fragment());
                    fragments.set(a.index(), fragments.get(a.index()) + 1);
                }
            }
        }
        return new Result(content.toString(), reasoning.toString(), p.calls(), names,
                args.stream().map(StringBuilder::toString).toList(), fragments);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void parsersRecoverWhatTheTemplateRendered(String name, JsonNode c) throws Exception {
        String source = source(c.get("template").asString());
        ToolCallFormat format = ToolCallFormat.detect(source).orElseThrow();
        ChatFormat.Reasoning reasoning = ChatFormat.reasoningOf(source).orElse(null);
        String output = c.get("output").asString();
        for (int piece : new int[] {output.length() + 1, 3, 1}) {
            Result r = parse(new ChatOutputParser(format, reasoning, false, false, true), output, piece);
            assertThat(r.content()).as("content").isEqualTo(c.get("content").asString());
            assertThat(r.content()).doesNotContain(format.marker(), "</tool_call>", "<think>", "</think>");
            String expectedReasoning = c.get("reasoning").isNull() ? "" : c.get("reasoning").asString();
            assertThat(r.reasoning().strip()).as("reasoning").isEqualTo(expectedReasoning);
            JsonNode calls = c.get("calls");
            assertThat(r.calls()).hasSize(calls.size());
            for (int i = 0; i < calls.size(); i++) {
                ToolCall call = r.calls().get(i);
                assertThat(call.name()).isEqualTo(calls.get(i).get("name").asString());
                assertThat(JSON.readTree(call.arguments())).isEqualTo(calls.get(i).get("arguments"));
                assertThat(call.id()).matches("call_[0-9a-f]{24}");
                // streamed: the start names the call, the fragments concatenate to exactly its arguments, and
                // fed in small pieces they arrive in several fragments
                assertThat(r.streamedNames().get(i)).isEqualTo(call.name());
                assertThat(r.streamedArguments().get(i)).isEqualTo(call.arguments());
                if (piece <= 3 && call.arguments().length() > 3) {
                    assertThat(r.fragments().get(i)).isGreaterThan(1);
                }
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void javaRendersToolPromptsLikeJinja2(String name, JsonNode c) throws Exception {
        String template = c.get("template").asString();
        Map<String, Object> special = new HashMap<>();
        switch (template) {
            case "qwen3" -> {
                special.put("bos_token", null);
                special.put("eos_token", "<|im_end|>");
            }
            case "tiny-llama-h128" -> {
                special.put("bos_token", "<|endoftext|>");
                special.put("eos_token", "<|endoftext|>");
            }
            case "llama3_1_json" -> {
                special.put("bos_token", "<|begin_of_text|>");
                special.put("eos_token", "<|eot_id|>");
            }
            default -> {
                special.put("bos_token", "<s>");
                special.put("eos_token", "</s>");
            }
        }
        // the generator's strftime_now formats 2026-01-15 12:00
        Clock day = Clock.fixed(Instant.parse("2026-01-15T12:00:00Z"), ZoneOffset.UTC);
        ChatTemplate t = ChatTemplate.compile(source(template), TemplateOptions.of(special).withClock(day));
        @SuppressWarnings("unchecked")
        List<Object> tools = JSON.convertValue(c.get("tools"), List.class);
        String prompt = t.render(List.of(Map.of("role", "user", "content", "What is the weather in Paris?")),
                tools.isEmpty() ? null : tools, true, Map.of());
        assertThat(prompt).isEqualTo(c.get("prompt").asString());
    }
}
