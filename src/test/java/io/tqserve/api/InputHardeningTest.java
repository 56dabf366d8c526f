package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Hostile input: every case is answered 4xx with an OpenAI error body naming the problem (param and code where
 * there is one), and none reaches a lane — the routing-decision and finished counters do not move.
 */
class InputHardeningTest extends HardenedServingContext {
    static final String CHAT = "/v1/chat/completions";
    static final String COMPLETIONS = "/v1/completions";

    /**
     * @param path    endpoint
     * @param body    raw request body
     * @param status  expected status
     * @param param   expected error.param, or null for none
     * @param code    expected error.code, or null for none
     */
    record Case(String what, String path, byte[] body, int status, String param, String code) {
        static Case json(String what, String path, String json, int status, String param, String code) {
            return new Case(what, path, json.getBytes(StandardCharsets.UTF_8), status, param, code);
        }
    }

    static String chat(String extra) {
        return "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]" + extra + "}";
    }

    static String completion(String extra) {
        return "{\"prompt\":\"The ls command\"" + extra + "}";
    }

    static String messages(int n) {
        StringBuilder sb = new StringBuilder("{\"messages\":[");
        for (int i = 0; i < n; i++) {
            sb.append(i == 0 ? "" : ",").append("{\"role\":\"").append(i % 2 == 0 ? "user" : "assistant")
                    .append("\",\"content\":\"m").append(i).append("\"}");
        }
        return sb.append("]}").toString();
    }

    static String nested(int depth) {
        return completion(",\"x\":" + "[".repeat(depth) + "]".repeat(depth));
    }

    static String logitBias(int entries) {
        StringBuilder sb = new StringBuilder(",\"logit_bias\":{");
        for (int i = 0; i < entries; i++) {
            sb.append(i == 0 ? "" : ",").append('"').append(i).append("\":1");
        }
        return completion(sb.append('}').toString());
    }

    static byte[] withBytes(String before, byte[] middle, String after) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes(before.getBytes(StandardCharsets.UTF_8));
        b.writeBytes(middle);
        b.writeBytes(after.getBytes(StandardCharsets.UTF_8));
        return b.toByteArray();
    }

    static List<Case> cases() {
        String x5000 = "x".repeat(5000);
        String a2100 = "a ".repeat(1050);
        List<Case> c = new ArrayList<>();
        // Size limits.
        c.add(Case.json("body over the 64 KB limit", COMPLETIONS, completion(",\"user\":\"" + "u".repeat(70_000)
                + "\""), 413, null, "body_too_large"));
        c.add(Case.json("body over the limit on /tokenize", "/tokenize", "{\"prompt\":\"" + "u".repeat(70_000)
                + "\"}", 413, null, "body_too_large"));
        c.add(Case.json("prompt over max-prompt-chars", COMPLETIONS, "{\"prompt\":\"" + x5000 + "\"}", 400, "prompt",
                "string_above_max_length"));
        c.add(Case.json("one message over max-prompt-chars", CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\""
                + x5000 + "\"}]}", 400, "messages[0].content", "string_above_max_length"));
        c.add(Case.json("messages together over max-prompt-chars", CHAT, "{\"messages\":[{\"role\":\"user\","
                + "\"content\":\"" + a2100 + "\"},{\"role\":\"user\",\"content\":\"" + a2100 + "\"}]}", 400,
                "messages", "string_above_max_length"));
        c.add(Case.json("tokenize prompt over max-prompt-chars", "/tokenize", "{\"prompt\":\"" + x5000 + "\"}", 400,
                "prompt", "string_above_max_length"));
        c.add(Case.json("9 messages over max-messages", CHAT, messages(9), 400, "messages",
                "array_above_max_length"));
        c.add(Case.json("9 messages on /tokenize", "/tokenize", messages(9), 400, "messages",
                "array_above_max_length"));
        c.add(Case.json("model id of 300 characters", COMPLETIONS, completion(",\"model\":\"" + "m".repeat(300)
                + "\""), 400, "model", "string_above_max_length"));
        c.add(Case.json("stop sequence of 2000 characters", COMPLETIONS, completion(",\"stop\":\"" + "s".repeat(2000)
                + "\""), 400, "stop", "string_above_max_length"));
        // max_tokens against the context (2048), including values that overflow int arithmetic.
        for (String v : new String[] {"2147483647", "2147483646", "2046", "4000"}) {
            c.add(Case.json("max_tokens " + v, COMPLETIONS, completion(",\"max_tokens\":" + v), 400, "max_tokens",
                    "context_length_exceeded"));
        }
        c.add(Case.json("max_completion_tokens 2^31-1", CHAT, chat(",\"max_completion_tokens\":2147483647"), 400,
                "max_completion_tokens", "context_length_exceeded"));
        for (String v : new String[] {"2147483648", "1e30", "99999999999999999999999", "-1", "0", "2.5", "\"8\""}) {
            c.add(Case.json("max_tokens " + v, COMPLETIONS, completion(",\"max_tokens\":" + v), 400, "max_tokens",
                    null));
        }
        // Not Unicode, not UTF-8.
        c.add(new Case("invalid UTF-8 in a string", COMPLETIONS, withBytes("{\"prompt\":\"a", new byte[] {(byte) 0xC3,
                (byte) 0x28}, "\"}"), 400, null, null));
        c.add(new Case("a lone continuation byte", CHAT, withBytes("{\"messages\":[{\"role\":\"user\",\"content\":\"",
                new byte[] {(byte) 0x80}, "\"}]}"), 400, null, null));
        c.add(new Case("0xFF outside strings", COMPLETIONS, withBytes("{\"prompt\":\"a\"", new byte[] {(byte) 0xFF},
                "}"), 400, null, null));
        c.add(new Case("an overlong encoding of '/'", "/tokenize", withBytes("{\"prompt\":\"", new byte[] {
                (byte) 0xC0, (byte) 0xAF}, "\"}"), 400, null, null));
        c.add(Case.json("an unpaired high surrogate", COMPLETIONS, "{\"prompt\":\"a\\ud800b\"}", 400, "prompt",
                "invalid_unicode"));
        c.add(Case.json("an unpaired low surrogate in chat", CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":"
                + "\"\\udc00\"}]}", 400, "messages[0].content", "invalid_unicode"));
        c.add(Case.json("an unpaired surrogate in stop", COMPLETIONS, completion(",\"stop\":[\"\\ud83d\"]"), 400,
                "stop", "invalid_unicode"));
        c.add(Case.json("an unpaired surrogate on /tokenize", "/tokenize", "{\"prompt\":\"\\ud800\"}", 400, "prompt",
                "invalid_unicode"));
        // Numbers that are not JSON, or out of range.
        for (String v : new String[] {"NaN", "Infinity", "-Infinity", "+1", "0x10", ".5", "1e999", "-1e999"}) {
            boolean validJson = v.equals("1e999") || v.equals("-1e999");
            c.add(Case.json("temperature " + v, COMPLETIONS, completion(",\"temperature\":" + v), 400,
                    validJson ? "temperature" : null, null));
        }
        c.add(Case.json("logit_bias value NaN", COMPLETIONS, completion(",\"logit_bias\":{\"5\":NaN}"), 400, null,
                null));
        c.add(Case.json("logit_bias value 1e999", COMPLETIONS, completion(",\"logit_bias\":{\"5\":1e999}"), 400,
                "logit_bias", null));
        c.add(Case.json("a number of 200 digits", COMPLETIONS, completion(",\"seed\":" + "9".repeat(200)), 400, null,
                null));
        // Huge n, logprobs, logit_bias maps.
        for (String v : new String[] {"2", "128", "1000000", "1e9", "4294967297"}) {
            c.add(Case.json("n " + v, COMPLETIONS, completion(",\"n\":" + v), 400, "n", null));
        }
        c.add(Case.json("completions logprobs 1000000", COMPLETIONS, completion(",\"logprobs\":1000000"), 400,
                "logprobs", null));
        c.add(Case.json("chat top_logprobs 1000000", CHAT, chat(",\"logprobs\":true,\"top_logprobs\":1000000"), 400,
                "top_logprobs", null));
        c.add(Case.json("logit_bias of 301 entries", COMPLETIONS, logitBias(301), 400, "logit_bias", null));
        c.add(Case.json("logit_bias of 5000 entries", COMPLETIONS, logitBias(5000), 400, "logit_bias", null));
        c.add(Case.json("logit_bias key -1", COMPLETIONS, completion(",\"logit_bias\":{\"-1\":1}"), 400, "logit_bias",
                null));
        c.add(Case.json("best_of 1000", COMPLETIONS, completion(",\"best_of\":1000"), 400, "best_of", null));
        c.add(Case.json("5 stop sequences", COMPLETIONS, completion(",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]"), 400,
                "stop", null));
        // Unknown roles.
        for (String role : new String[] {"function", "", "USER", "system ", "ipython"}) {
            c.add(Case.json("role '" + role + "'", CHAT, "{\"messages\":[{\"role\":\"" + role
                    + "\",\"content\":\"hi\"}]}", 400, "messages[0].role", null));
        }
        c.add(Case.json("role 'tool' without tool_call_id", CHAT, "{\"messages\":[{\"role\":\"tool\",\"content\":"
                + "\"hi\"}]}", 400, "messages[0].tool_call_id", null));
        c.add(Case.json("role not a string", CHAT, "{\"messages\":[{\"role\":1,\"content\":\"hi\"}]}", 400,
                "messages[0].role", null));
        // Deeply nested JSON and duplicate names.
        for (int depth : new int[] {33, 1000, 20_000}) {
            c.add(Case.json("nesting depth " + depth, COMPLETIONS, nested(depth), 400, null, null));
        }
        c.add(Case.json("nesting on /tokenize", "/tokenize", "{\"prompt\":\"x\",\"y\":" + "{\"a\":".repeat(40) + "1"
                + "}".repeat(40) + "}", 400, null, null));
        c.add(Case.json("a name given twice", COMPLETIONS, "{\"prompt\":\"x\",\"max_tokens\":1,\"max_tokens\":99999}",
                400, null, null));
        c.add(Case.json("a 2000-character name", COMPLETIONS, completion(",\"" + "k".repeat(2000) + "\":1"), 400,
                null, null));
        // Not an object at all.
        for (String body : new String[] {"[]", "\"prompt\"", "42", "null", "true", "{", "{}}", "{\"prompt\":\"x\"} {}"}) {
            c.add(Case.json("body " + body, COMPLETIONS, body, 400, null, null));
        }
        return c;
    }

    @Test
    void everyHostileInputIsA4xxOpenAiErrorAndNoneReachesALane() throws Exception {
        double routed = routedSoFar();
        double finished = finishedSoFar();
        List<String> failures = new ArrayList<>();
        for (Case c : cases()) {
            HttpResponse<String> r = send("POST", c.path(), c.body(), "Authorization", "Bearer " + KEY);
            String body = r.body();
            String expectParam = c.param() == null ? "\"param\":null" : "\"param\":\"" + c.param() + "\"";
            String expectCode = c.code() == null ? "" : "\"code\":\"" + c.code() + "\"";
            if (r.statusCode() != c.status() || !body.startsWith("{\"error\":{\"message\":\"")
                    || !body.contains("\"type\":\"invalid_request_error\"") || !body.contains(expectParam)
                    || !body.contains(expectCode)) {
                failures.add(c.what() + ": " + r.statusCode() + " " + body);
            }
        }
        assertThat(failures).isEmpty();
        assertThat(routedSoFar()).as("requests routed to a lane").isEqualTo(routed);
        assertThat(finishedSoFar()).as("sequences run").isEqualTo(finished);
    }

    @Test
    void theLimitsAreInclusive() throws Exception {
        double routed = routedSoFar();
        assertThat(post("/tokenize", "{\"prompt\":\"" + "x".repeat(4096) + "\"}").statusCode()).isEqualTo(200);
        assertThat(post("/tokenize", messages(8)).statusCode()).isEqualTo(200);
        assertThat(routedSoFar()).isEqualTo(routed);
        // Prompt (3 tokens) + max_tokens up to the context (2048) is accepted; one more is not.
        var model = runtime.loaded().orElseThrow().model();
        RequestParser parser = new RequestParser(model.config().vocabSize(), 8, 4096);
        PromptBuilder builder = new PromptBuilder(new StructuredOutput(model), new ApiSettings(java.util.List.of(), false, 512,
                java.time.Duration.ofSeconds(5), java.time.Duration.ofSeconds(1)));
        ParsedRequest atLimit = parser.parse(Json.read(completion(",\"max_tokens\":2045,\"stop\":\"" + "s".repeat(1024)
                + "\",\"model\":\"" + "m".repeat(256) + "\"").getBytes(StandardCharsets.UTF_8)), Endpoint.COMPLETION,
                null);
        assertThat(builder.prepare(atLimit).generation().worstCaseTokens()).isEqualTo(2048);
        ParsedRequest over = parser.parse(Json.read(completion(",\"max_tokens\":2046").getBytes(StandardCharsets.UTF_8)),
                Endpoint.COMPLETION, null);
        assertThatThrownBy(() -> builder.prepare(over)).isInstanceOf(ApiException.class)
                .hasMessageContaining("maximum context length is 2048");
    }
}
