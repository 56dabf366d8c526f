package io.tqserve.api;

import io.tqserve.engine.GenerationRequest;
import io.tqserve.routing.RouteDecision;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One log line per routed generation request on the logger {@code io.tqserve.api.RequestLog}: id, endpoint,
 * lane and reason, prompt tokens, max_tokens, stream. By default at DEBUG and without any prompt text; with
 * {@code tqserve.api.log-prompts=true} at INFO with the prompt text (the rendered chat prompt or the completion
 * prompt, escaped, at most {@link #MAX_LOGGED_CHARS} characters). No other tqserve log line carries request text.
 */
final class RequestLog {
    static final int MAX_LOGGED_CHARS = 8192;
    private static final Logger log = LoggerFactory.getLogger(RequestLog.class);

    private final boolean logPrompts;

    RequestLog(boolean logPrompts) {
        this.logPrompts = logPrompts;
    }

    void routed(String id, ParsedRequest r, GenerationRequest gen, RouteDecision d, Supplier<String> promptText) {
        if (logPrompts ? !log.isInfoEnabled() : !log.isDebugEnabled()) {
            return;
        }
        String line = line(id, r, gen, d, logPrompts ? promptText.get() : "");
        if (logPrompts) {
            log.info(line);
        } else {
            log.debug(line);
        }
    }

    String line(String id, ParsedRequest r, GenerationRequest gen, RouteDecision d, String promptText) {
        StringBuilder sb = new StringBuilder(128).append("request ").append(id)
                .append(" endpoint=").append(r.endpoint() == Endpoint.CHAT ? "chat" : "completions")
                .append(" lane=").append(d.lane().kind().wireName())
                .append(" reason=").append(d.reason().wireName())
                .append(" prompt_tokens=").append(gen.promptTokens().length)
                .append(" max_tokens=").append(gen.params().maxTokens())
                .append(" stream=").append(r.stream());
        if (logPrompts) {
            sb.append(" prompt=\"").append(escape(promptText)).append('"');
        }
        return sb.toString();
    }

    /** Escapes quotes, backslashes and control characters so one prompt stays one log line. */
    static String escape(String s) {
        int n = Math.min(s.length(), MAX_LOGGED_CHARS);
        StringBuilder sb = new StringBuilder(n + 16);
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20 || c == 0x7f) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        if (s.length() > n) {
            sb.append("...(+").append(s.length() - n).append(" chars)");
        }
        return sb.toString();
    }
}
