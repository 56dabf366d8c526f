package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * {@code /v1/messages} on the wire: the streamed events in Anthropic's order and framing ({@code event:} line,
 * {@code data:} line, blank line), block indexes, the final usage; the same greedy text as chat completions.
 */
class MessagesSseTest extends ServingTestContext {
    /** One SSE event: its {@code event:} name and its parsed {@code data:}. */
    record Event(String name, JsonNode data) {
    }

    static List<Event> events(String body) {
        List<Event> out = new ArrayList<>();
        for (String frame : body.split("\n\n")) {
            if (frame.isBlank()) {
                continue;
            }
            String[] lines = frame.split("\n");
            assertThat(lines).as(frame).hasSize(2);
            assertThat(lines[0]).startsWith("event: ");
            assertThat(lines[1]).startsWith("data: ");
            out.add(new Event(lines[0].substring(7), ToolsSdkTest.JSON.readTree(lines[1].substring(6))));
        }
        assertThat(body).endsWith("\n\n");
        return out;
    }

    static final String MESSAGES = "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\""
            + OpenAiSdkTest.CHAT_TEXT + "\"}]}]";

    @Test
    void streamedTextFollowsAnthropicsEventSequence() throws Exception {
        var r = post("/v1/messages", "{\"model\":\"tiny-llama-h128\",\"max_tokens\":8,\"temperature\":0,"
                + "\"stream\":true," + MESSAGES + "}", "X-Tqserve-Lane", "batched", "anthropic-version",
                "2023-06-01");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type").orElseThrow()).startsWith("text/event-stream");
        List<Event> ev = events(r.body());
        List<String> names = ev.stream().map(Event::name).toList();
        assertThat(names.subList(0, 3)).containsExactly("message_start", "ping", "content_block_start");
        assertThat(names.subList(names.size() - 3, names.size()))
                .containsExactly("content_block_stop", "message_delta", "message_stop");
        assertThat(names.subList(3, names.size() - 3)).isNotEmpty().allMatch(n -> n.equals("content_block_delta"));
        for (Event e : ev) {
            assertThat(e.data().get("type").asString()).isEqualTo(e.name());
        }
        JsonNode start = ev.getFirst().data().get("message");
        assertThat(start.get("id").asString()).startsWith("msg_");
        assertThat(start.get("type").asString()).isEqualTo("message");
        assertThat(start.get("role").asString()).isEqualTo("assistant");
        assertThat(start.get("content").isEmpty()).isTrue();
        assertThat(start.get("stop_reason").isNull()).isTrue();
        int prompt = start.get("usage").get("input_tokens").asInt() + start.get("usage").get("cache_read_input_tokens")
                .asInt();
        JsonNode block = ev.get(2).data();
        assertThat(block.get("index").asInt()).isZero();
        assertThat(block.get("content_block").toString()).isEqualTo("{\"type\":\"text\",\"text\":\"\"}");
        StringBuilder text = new StringBuilder();
        for (Event e : ev.subList(3, ev.size() - 3)) {
            assertThat(e.data().get("index").asInt()).isZero();
            assertThat(e.data().get("delta").get("type").asString()).isEqualTo("text_delta");
            text.append(e.data().get("delta").get("text").asString());
        }
        assertThat(ev.get(ev.size() - 3).data().toString()).isEqualTo("{\"type\":\"content_block_stop\",\"index\":0}");
        JsonNode delta = ev.get(ev.size() - 2).data();
        assertThat(delta.get("delta").get("stop_reason").asString()).isEqualTo("max_tokens");
        assertThat(delta.get("delta").get("stop_sequence").isNull()).isTrue();
        assertThat(delta.get("usage").get("output_tokens").asInt()).isEqualTo(8);
        assertThat(delta.get("usage").get("input_tokens").asInt()
                + delta.get("usage").get("cache_read_input_tokens").asInt()).isEqualTo(prompt);
        assertThat(ev.getLast().data().toString()).isEqualTo("{\"type\":\"message_stop\"}");

        var plain = post("/v1/messages", "{\"model\":\"tiny-llama-h128\",\"max_tokens\":8,\"temperature\":0,"
                + MESSAGES + "}", "X-Tqserve-Lane", "batched");
        JsonNode m = ToolsSdkTest.JSON.readTree(plain.body());
        assertThat(m.get("content").get(0).get("text").asString()).isEqualTo(text.toString());
        assertThat(m.get("stop_reason").asString()).isEqualTo("max_tokens");
    }

    @Test
    void greedyTextEqualsChatCompletions() throws Exception {
        double chats = counter("tqserve.requests.endpoint", "lane", "batched", "endpoint", "chat");
        double mine = counter("tqserve.requests.endpoint", "lane", "batched", "endpoint", "messages");
        String system = "You are terse.";
        var chat = post("/v1/chat/completions", "{\"model\":\"tiny-llama-h128\",\"max_tokens\":16,\"temperature\":0,"
                + "\"messages\":[{\"role\":\"system\",\"content\":\"" + system + "\"},{\"role\":\"user\",\"content\":\""
                + OpenAiSdkTest.CHAT_TEXT + "\"}]}", "X-Tqserve-Lane", "batched");
        JsonNode c = ToolsSdkTest.JSON.readTree(chat.body());
        var msg = post("/v1/messages", "{\"model\":\"tiny-llama-h128\",\"max_tokens\":16,\"temperature\":0,"
                + "\"system\":[{\"type\":\"text\",\"text\":\"" + system + "\"}]," + MESSAGES + "}",
                "X-Tqserve-Lane", "batched");
        JsonNode m = ToolsSdkTest.JSON.readTree(msg.body());
        assertThat(m.get("content").get(0).get("text").asString())
                .isEqualTo(c.get("choices").get(0).get("message").get("content").asString()).isNotBlank();
        assertThat(m.get("usage").get("input_tokens").asInt() + m.get("usage").get("cache_read_input_tokens").asInt())
                .isEqualTo(c.get("usage").get("prompt_tokens").asInt());
        // the metric tells the endpoints apart although both were served as chat requests
        assertThat(counter("tqserve.requests.endpoint", "lane", "batched", "endpoint", "chat")).isEqualTo(chats + 1);
        assertThat(counter("tqserve.requests.endpoint", "lane", "batched", "endpoint", "messages")).isEqualTo(mine + 1);
    }

    @Test
    void badRequestsAre400sInAnthropicsShape() throws Exception {
        String[][] cases = {
            {"{\"model\":\"m\"," + MESSAGES + "}", "max_tokens"},
            {"{\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":{}}]}]}",
                "messages.0.content.0.type"},
            {"{\"max_tokens\":4,\"tools\":[{\"type\":\"web_search_20250305\",\"name\":\"web_search\"}]," + MESSAGES
                + "}", "web_search_20250305"},
            {"{\"max_tokens\":4,\"stop_sequences\":[\"a\",\"b\",\"c\",\"d\",\"e\"]," + MESSAGES + "}",
                "stop_sequences"},
            {"{\"max_tokens\":4,\"temperature\":1.5," + MESSAGES + "}", "temperature"},
            {"{\"max_tokens\":4,\"mcp_servers\":[{}]," + MESSAGES + "}", "mcp_servers"},
            {"[1]", "JSON object"},
        };
        for (String[] c : cases) {
            var r = post("/v1/messages", c[0]);
            assertThat(r.statusCode()).as(c[0] + " -> " + r.body()).isEqualTo(400);
            JsonNode e = ToolsSdkTest.JSON.readTree(r.body());
            assertThat(e.get("type").asString()).isEqualTo("error");
            assertThat(e.get("error").get("type").asString()).isEqualTo("invalid_request_error");
            assertThat(e.get("error").get("message").asString()).contains(c[1]);
            assertThat(e.size()).isEqualTo(2);
        }
        var notFound = post("/v1/messages/nope", "{}");
        assertThat(notFound.statusCode()).isEqualTo(404);
        assertThat(ToolsSdkTest.JSON.readTree(notFound.body()).get("error").get("type").asString())
                .isEqualTo("not_found_error");
    }

    @Test
    void thinkingOnAModelThatDoesNotReasonIsAcceptedWithNothingToCap() throws Exception {
        // the embedded model's template has no reasoning markers: budget_tokens caps nothing (no 400 for
        // thinking_token_budget, which the chat path gives for such a model), and the answer is the text block
        var r = post("/v1/messages", "{\"model\":\"tiny-llama-h128\",\"max_tokens\":6,\"temperature\":0,"
                + "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":2048}," + MESSAGES + "}", "X-Tqserve-Lane",
                "batched", "anthropic-version", "2023-06-01");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode content = ToolsSdkTest.JSON.readTree(r.body()).get("content");
        assertThat(content).hasSize(1);
        assertThat(content.get(0).get("type").asString()).isEqualTo("text");
        var chat = post("/v1/chat/completions", "{\"max_tokens\":6,\"thinking_token_budget\":2048,"
                + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
        assertThat(chat.statusCode()).isEqualTo(400);
    }
}
