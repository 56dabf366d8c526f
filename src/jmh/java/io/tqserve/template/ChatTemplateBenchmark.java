package io.tqserve.template;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Rendering a 20-message conversation (system prompt + 19 alternating user/assistant turns of ~200 characters)
 * with a compiled chat template, after warm-up. {@code chatml} is the embedded model's ChatML template, whose
 * prompt {@link #handWrittenChatMl} also builds by plain string concatenation (the floor any renderer pays);
 * {@code qwen3} and {@code llama3.1} are the published Qwen3 template and Llama 3.1's tool-calling template (with
 * two tools offered). Run from the repository root:
 *
 * <pre>
 * ./mvnw -Pjmh -DskipTests package
 * $JAVA_HOME/bin/java -cp target/benchmarks.jar io.tqserve.template.ChatTemplateBenchmark -f 1 -wi 3 -i 5 -w 1s -r 1s
 * </pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g"})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class ChatTemplateBenchmark {

    @Param({"chatml", "qwen3", "llama3.1"})
    public String template;

    private ChatTemplate compiled;
    private List<Map<String, Object>> messages;
    private List<Object> tools;

    @Setup
    public void setUp() throws Exception {
        compiled = switch (template) {
            case "chatml" -> ChatTemplate.load(Path.of("models/tiny-llama-h128")).orElseThrow();
            case "qwen3" -> ChatTemplate.fromTokenizerConfig(
                    Path.of("goldens/templates/sources/qwen3/tokenizer_config.json"), TemplateOptions.of(Map.of()));
            default -> ChatTemplate.compile(Files.readString(
                    Path.of("goldens/templates/corpus/templates/meta-llama-Llama-3.1-8B-Instruct.jinja")),
                    Map.of("bos_token", "<|begin_of_text|>", "eos_token", "<|eot_id|>"));
        };
        messages = new ArrayList<>();
        messages.add(ChatTemplate.message("system", "You are a helpful assistant. Answer briefly and precisely."));
        String text = "Tell me more about the history of the city, its rivers, bridges and the people who built them. ";
        for (int i = 0; i < 19; i++) {
            messages.add(ChatTemplate.message(i % 2 == 0 ? "user" : "assistant", i + ": " + text + text));
        }
        tools = template.equals("llama3.1") ? List.of(tool("get_weather"), tool("get_time")) : null;
        if (template.equals("chatml") && !handWrittenChatMl().equals(render())) {
            throw new IllegalStateException("the hand-written ChatML prompt differs from the template's");
        }
    }

    private static Map<String, Object> tool(String name) {
        return Map.of("type", "function", "function", Map.of("name", name, "description", "Look something up.",
                "parameters", Map.of("type", "object", "properties", Map.of("city", Map.of("type", "string")),
                        "required", List.of("city"))));
    }

    @Benchmark
    public String render() {
        return compiled.render(messages, tools, true, Map.of());
    }

    /** The same ChatML prompt built by concatenation: what rendering costs at least. */
    @Benchmark
    public String handWrittenChatMl() {
        StringBuilder b = new StringBuilder();
        for (Map<String, Object> m : messages) {
            b.append("<|im_start|>").append(m.get("role")).append('\n').append(m.get("content")).append("<|im_end|>\n");
        }
        return b.append("<|im_start|>assistant\n").toString();
    }
}
