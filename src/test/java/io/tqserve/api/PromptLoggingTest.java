package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.core.read.ListAppender;
import io.tqserve.engine.GenerationRequest;
import io.tqserve.engine.Lane;
import io.tqserve.engine.SamplingParams;
import io.tqserve.routing.RouteDecision;
import io.tqserve.routing.RouteReason;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.SimpleFormatter;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * No prompt text in the logs by default ({@code tqserve.api.log-prompts=false}): with the request log at DEBUG,
 * every routed request is logged with its id, lane and token counts, and the text of no prompt — accepted,
 * rejected or tokenized — appears anywhere in the output. With log-prompts the line carries the prompt, escaped.
 */
class PromptLoggingTest extends HardenedServingContext {
    static final String SECRET = "Zebra-secret-4471";

    /**
     * Every logging event while the requests run, from every logger (tqserve's at TRACE, the rest at INFO), with
     * their messages and stack traces as text. Attached to Logback's root logger (and JUL's) directly: other tests
     * in this JVM start applications of their own that reconfigure the console.
     */
    @Test
    void promptTextNeverReachesTheLogByDefault() throws Exception {
        LoggerContext lc = (LoggerContext) LoggerFactory.getILoggerFactory();
        ch.qos.logback.classic.Logger root = lc.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        ch.qos.logback.classic.Logger tqserve = lc.getLogger("io.tqserve");
        Level rootLevel = root.getLevel();
        Level tqserveLevel = tqserve.getLevel();
        ListAppender<ILoggingEvent> events = new ListAppender<>();
        events.setContext(lc);
        events.start();
        root.addAppender(events);
        root.setLevel(Level.INFO);
        tqserve.setLevel(Level.TRACE);
        // The lanes log through System.Logger, which reaches Logback only while Spring Boot's JUL bridge is
        // installed (an application closed earlier in this JVM removes it): capture JUL as well.
        List<LogRecord> julRecords = new CopyOnWriteArrayList<>();
        Handler jul = new Handler() {
            @Override
            public void publish(LogRecord r) {
                julRecords.add(r);
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        java.util.logging.Logger julRoot = java.util.logging.Logger.getLogger("");
        julRoot.addHandler(jul);
        try {
            assertThat(post("/v1/completions", "{\"prompt\":\"The ls command " + SECRET + "\",\"max_tokens\":1}")
                    .statusCode()).isEqualTo(200);
            assertThat(post("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"" + SECRET
                    + "\"}],\"max_tokens\":1,\"stream\":true}").statusCode()).isEqualTo(200);
            assertThat(post("/v1/completions", "{\"prompt\":\"" + SECRET + "\",\"temperature\":9}").statusCode())
                    .isEqualTo(400);
            assertThat(post("/v1/chat/completions", "{\"messages\":[{\"role\":\"" + SECRET + "\",\"content\":\""
                    + SECRET + "\"}]}").statusCode()).isEqualTo(400);
            assertThat(post("/tokenize", "{\"prompt\":\"" + SECRET + "\"}").statusCode()).isEqualTo(200);
            // A lane fault is logged with its stack trace, and still without the prompt.
            batchedLane().setStepHook((request, generated) -> {
                if (request.params().maxTokens() == 3) {
                    throw new IllegalStateException("injected fault");
                }
            });
            assertThat(post("/v1/completions", "{\"prompt\":\"" + SECRET + "\",\"max_tokens\":3}").statusCode())
                    .isEqualTo(500);
        } finally {
            julRoot.removeHandler(jul);
            root.detachAppender(events);
            root.setLevel(rootLevel);
            tqserve.setLevel(tqserveLevel);
        }
        StringBuilder all = new StringBuilder();
        for (ILoggingEvent e : events.list) {
            all.append(e.getLoggerName()).append(' ').append(e.getFormattedMessage()).append('\n');
            for (IThrowableProxy t = e.getThrowableProxy(); t != null; t = t.getCause()) {
                all.append(t.getMessage()).append('\n');
            }
        }
        for (LogRecord r : julRecords) {
            all.append(r.getLoggerName()).append(' ').append(new SimpleFormatter().formatMessage(r)).append('\n');
            for (Throwable t = r.getThrown(); t != null; t = t.getCause()) {
                all.append(t.getMessage()).append('\n');
            }
        }
        assertThat(all.toString()).containsPattern("io.tqserve.api.RequestLog request cmpl-[0-9a-f]{24} "
                + "endpoint=completions lane=batched reason=short-context prompt_tokens=\\d+ max_tokens=1 stream=false")
                .containsPattern("request chatcmpl-[0-9a-f]{24} endpoint=chat lane=batched")
                .containsPattern("sequence \\d+ \\(\\d+ prompt tokens, 0 generated\\) failed on the batched lane")
                .contains("injected fault")
                .doesNotContain(SECRET).doesNotContain("prompt=\"");
    }

    @Test
    void withLogPromptsTheLineCarriesThePromptEscaped() {
        ParsedRequest r = new ParsedRequest(Endpoint.COMPLETION, null, "x", null, 4, null, null, null, 0f, null,
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
