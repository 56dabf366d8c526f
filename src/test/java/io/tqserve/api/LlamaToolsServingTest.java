package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.config.TqserveApplication;
import io.tqserve.toolcall.ToolCallFormat;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * The embedded model served with the Llama 3.1 JSON tool-calling template (goldens/toolcalls/sources): several calls
 * in one turn come back as tool_calls[0..n] (written {@code ;}-separated), streamed with their arguments in
 * fragments, and {@code tool_choice: auto} is constrained too: content, or calls valid against their schemas.
 */
@SpringBootTest(classes = {TqserveApplication.class, LaneProbe.class},
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"tqserve.lanes.turbo.enabled=false"})
class LlamaToolsServingTest extends ServingClient {
    static final JsonMapper JSON = JsonMapper.builder().build();

    @DynamicPropertySource
    static void model(DynamicPropertyRegistry registry) throws Exception {
        Path dir = Files.createTempDirectory("tqserve-llama-tools");
        Path src = Path.of("models/tiny-llama-h128").toAbsolutePath();
        String template = Files.readString(Path.of("goldens/toolcalls/sources/llama3_1_json.jinja"));
        try (var files = Files.list(src)) {
            for (Path f : files.toList()) {
                Path to = dir.resolve(f.getFileName());
                if (f.getFileName().toString().equals("tokenizer_config.json")) {
                    ObjectNode cfg = (ObjectNode) JSON.readTree(f.toFile());
                    cfg.put("chat_template", template);
                    Files.writeString(to, cfg.toString());
                } else {
                    Files.createSymbolicLink(to, f);
                }
            }
        }
        registry.add("tqserve.model.path", dir::toString);
    }

    @Test
    void theTemplateIsReadAsLlama31Json() {
        assertThat(ChatFormats.of(runtime.loaded().orElseThrow().model()).tools())
                .contains(ToolCallFormat.LLAMA3_JSON);
    }

    @Test
    void twoCallsInOneTurnComeBackAsToolCalls0And1() throws Exception {
        ChatFormatServingTest.twoCallsInOneTurn(this);
    }

    @Test
    void autoWithToolSchemasNeverYieldsAnInvalidCall() throws Exception {
        // "{" made (much) likelier, so that answers start a call: each of those must still be a valid call
        int[] brace = runtime.loaded().orElseThrow().model().tokenizer().encode("{");
        assertThat(brace).hasSize(1);
        int withCalls = ChatFormatServingTest.autoNeverYieldsAnInvalidCall(this, null,
                ",\"logit_bias\":{\"" + brace[0] + "\":100}");
        assertThat(withCalls).isGreaterThan(50);
    }

    @Test
    void withoutParallelToolCallsOneCallComesBack() throws Exception {
        for (long seed = 1; seed <= 6; seed++) {
            var r = ChatFormatServingTest.post(this, "/v1/chat/completions", ChatFormatServingTest.toolRequest(
                    ChatFormatServingTest.WEATHER + "," + ChatFormatServingTest.TIME, "\"required\"", seed, false,
                    ",\"parallel_tool_calls\":false"));
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            assertThat(ChatFormatServingTest.calls(r.body())).hasSize(1);
        }
    }
}
