package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.engine.GenerationRequest;
import io.tqserve.engine.Lane;
import io.tqserve.engine.SamplingParams;
import io.tqserve.routing.RouteDecision;
import io.tqserve.routing.RouteReason;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.logging.LogLevel;
import org.springframework.boot.logging.LoggingSystem;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * No prompt text in the logs by default ({@code tqserve.api.log-prompts=false}): with the request log at DEBUG,
 * every routed request is logged with its id, lane and token counts, and the text of no prompt — accepted,
 * rejected or tokenized — appears anywhere in the output. With log-prompts the line carries the prompt, escaped.
 */
@ExtendWith(OutputCaptureExtension.class)
class PromptLoggingTest extends HardenedServingContext {
    static final String SECRET = "Zebra-secret-4471";

    /**
     * The logging system is global: another cached test context that started after this one reset the levels to
     * its own configuration, so set the request log's level here rather than only in the context's properties.
     */
    @BeforeEach
    void requestLogAtDebug() {
        LoggingSystem.get(getClass().getClassLoader()).setLogLevel(RequestLog.class.getName(), LogLevel.DEBUG);
    }

    @Test
    void promptTextNeverReachesTheLogByDefault(CapturedOutput output) throws Exception {
        assertThat(post("/v1/completions", "{\"prompt\":\"The ls command " + SECRET + "\",\"max_tokens\":1}")
                .statusCode()).isEqualTo(200);
        assertThat(post("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"" + SECRET
                + "\"}],\"max_tokens\":1,\"stream\":true}").statusCode()).isEqualTo(200);
        assertThat(post("/v1/completions", "{\"prompt\":\"" + SECRET + "\",\"temperature\":9}").statusCode())
                .isEqualTo(400);
        assertThat(post("/v1/chat/completions", "{\"messages\":[{\"role\":\"" + SECRET + "\",\"content\":\"" + SECRET
                + "\"}]}").statusCode()).isEqualTo(400);
        assertThat(post("/tokenize", "{\"prompt\":\"" + SECRET + "\"}").statusCode()).isEqualTo(200);
        assertThat(output.getOut()).containsPattern("request cmpl-[0-9a-f]{24} endpoint=completions lane=batched "
                + "reason=short-context prompt_tokens=\\d+ max_tokens=1 stream=false")
                .containsPattern("request chatcmpl-[0-9a-f]{24} endpoint=chat lane=batched")
                .doesNotContain(SECRET).doesNotContain("prompt=\"");
        assertThat(output.getErr()).doesNotContain(SECRET);
    }

    @Test
    void withLogPromptsTheLineCarriesThePromptEscaped() {
        ParsedRequest r = new ParsedRequest(Endpoint.COMPLETION, null, null, "x", null, 4, null, null, null, 0f, null,
                0f, 0f, null, Map.of(), List.of(), false, false, -1, false, false, Optional.empty(), null);
        GenerationRequest gen = new GenerationRequest(new int[] {5, 6, 7}, SamplingParams.greedy(4));
        RouteDecision d = new RouteDecision(batchedLane(), RouteReason.SHORT_CONTEXT);
        String prompt = "line one\n\"quoted\" \\ tab\t" + SECRET + "\u0001";
        assertThat(new RequestLog(true).line("cmpl-1", r, gen, d, prompt)).isEqualTo("request cmpl-1 "
                + "endpoint=completions lane=batched reason=short-context prompt_tokens=3 max_tokens=4 stream=false "
                + "prompt=\"line one\\n\\\"quoted\\\" \\\\ tab\\t" + SECRET + "\\u0001\"");
        assertThat(new RequestLog(false).line("cmpl-1", r, gen, d, prompt)).doesNotContain(SECRET);
        assertThat(RequestLog.escape("y".repeat(RequestLog.MAX_LOGGED_CHARS + 5)))
                .endsWith("y...(+5 chars)");
        assertThat(batchedLane().kind()).isEqualTo(Lane.Kind.BATCHED);
    }
}
