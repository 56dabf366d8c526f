package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * {@code /v1/responses} on the wire: the typed events in the reference's order with consecutive sequence numbers,
 * item and content indexes, the final usage; the same greedy text as chat completions; bad requests as OpenAI
 * error bodies naming the Responses field.
 */
class ResponsesSseTest extends ServingTestContext {
    static final String INPUT = "\"instructions\":\"You are terse.\",\"input\":[{\"role\":\"user\",\"content\":"
            + "[{\"type\":\"input_text\",\"text\":\"" + OpenAiSdkTest.CHAT_TEXT + "\"}]}]";

    @Test
    void streamedTextFollowsTheReferenceEventSequence() throws Exception {
        var r = post("/v1/responses", "{\"model\":\"tiny-llama-h128\",\"max_output_tokens\":8,\"temperature\":0,"
                + "\"stream\":true,\"metadata\":{\"k\":\"v\"}," + INPUT + "}", "X-Tqserve-Lane", "batched");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        List<MessagesSseTest.Event> ev = MessagesSseTest.events(r.body());
        List<String> names = ev.stream().map(MessagesSseTest.Event::name).toList();
        int n = names.size();
        assertThat(names.subList(0, 4)).containsExactly("response.created", "response.in_progress",
                "response.output_item.added", "response.content_part.added");
        assertThat(names.subList(4, n - 4)).isNotEmpty().allMatch(x -> x.equals("response.output_text.delta"));
        assertThat(names.subList(n - 4, n)).containsExactly("response.output_text.done",
                "response.content_part.done", "response.output_item.done", "response.incomplete");
        for (int i = 0; i < n; i++) {
            assertThat(ev.get(i).data().get("type").asString()).isEqualTo(names.get(i));
            assertThat(ev.get(i).data().get("sequence_number").asInt()).isEqualTo(i);
        }
        JsonNode created = ev.getFirst().data().get("response");
        String id = created.get("id").asString();
        assertThat(id).startsWith("resp_");
        assertThat(created.get("object").asString()).isEqualTo("response");
        assertThat(created.get("status").asString()).isEqualTo("in_progress");
        assertThat(created.get("output").isEmpty()).isTrue();
        assertThat(created.get("usage").isNull()).isTrue();
        assertThat(created.get("instructions").asString()).isEqualTo("You are terse.");
        assertThat(created.get("metadata").toString()).isEqualTo("{\"k\":\"v\"}");
        JsonNode added = ev.get(2).data();
        assertThat(added.get("output_index").asInt()).isZero();
        JsonNode item = added.get("item");
        String itemId = item.get("id").asString();
        assertThat(itemId).startsWith("msg_");
        assertThat(item.toString()).isEqualTo("{\"id\":\"" + itemId + "\",\"type\":\"message\",\"status\":"
                + "\"in_progress\",\"role\":\"assistant\",\"content\":[]}");
        assertThat(ev.get(3).data().get("part").toString())
                .isEqualTo("{\"type\":\"output_text\",\"text\":\"\",\"annotations\":[],\"logprobs\":[]}");
        StringBuilder text = new StringBuilder();
        for (MessagesSseTest.Event e : ev.subList(3, n - 2)) {
            assertThat(e.data().get("item_id").asString()).isEqualTo(itemId);
            assertThat(e.data().get("output_index").asInt()).isZero();
            if (e.name().equals("response.output_text.delta")) {
                assertThat(e.data().get("content_index").asInt()).isZero();
                text.append(e.data().get("delta").asString());
            }
        }
        assertThat(ev.get(n - 4).data().get("text").asString()).isEqualTo(text.toString());
        assertThat(ev.get(n - 3).data().get("part").get("text").asString()).isEqualTo(text.toString());
        JsonNode doneItem = ev.get(n - 2).data().get("item");
        assertThat(doneItem.get("status").asString()).isEqualTo("incomplete");
        assertThat(doneItem.get("content").get(0).get("text").asString()).isEqualTo(text.toString());
        JsonNode last = ev.getLast().data().get("response");
        assertThat(last.get("id").asString()).isEqualTo(id);
        assertThat(last.get("status").asString()).isEqualTo("incomplete");
        assertThat(last.get("incomplete_details").toString()).isEqualTo("{\"reason\":\"max_output_tokens\"}");
        assertThat(last.get("output").get(0)).isEqualTo(doneItem);
        JsonNode usage = last.get("usage");
        assertThat(usage.get("output_tokens").asInt()).isEqualTo(8);
        assertThat(usage.get("total_tokens").asInt()).isEqualTo(usage.get("input_tokens").asInt() + 8);
        assertThat(usage.get("input_tokens_details").has("cached_tokens")).isTrue();
        assertThat(usage.get("output_tokens_details").get("reasoning_tokens").asInt()).isZero();
        // kept (store defaults to true): GET answers the final response
        var got = client.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(baseUrl() + "/v1/responses/"
                + id)).GET().build(), java.net.http.HttpResponse.BodyHandlers.ofString());
        assertThat(ToolsSdkTest.JSON.readTree(got.body())).isEqualTo(last);
    }

    @Test
    void greedyTextEqualsChatCompletions() throws Exception {
        double chats = counter("tqserve.requests.endpoint", "lane", "batched", "endpoint", "chat");
        double mine = counter("tqserve.requests.endpoint", "lane", "batched", "endpoint", "responses");
        var chat = post("/v1/chat/completions", "{\"model\":\"tiny-llama-h128\",\"max_tokens\":16,\"temperature\":0,"
                + "\"messages\":[{\"role\":\"system\",\"content\":\"You are terse.\"},{\"role\":\"user\",\"content\":\""
                + OpenAiSdkTest.CHAT_TEXT + "\"}]}", "X-Tqserve-Lane", "batched");
        JsonNode c = ToolsSdkTest.JSON.readTree(chat.body());
        var resp = post("/v1/responses", "{\"model\":\"tiny-llama-h128\",\"max_output_tokens\":16,\"temperature\":0,"
                + "\"store\":false," + INPUT + "}", "X-Tqserve-Lane", "batched");
        JsonNode r = ToolsSdkTest.JSON.readTree(resp.body());
        assertThat(r.get("output").get(0).get("content").get(0).get("text").asString())
                .isEqualTo(c.get("choices").get(0).get("message").get("content").asString()).isNotBlank();
        assertThat(r.get("usage").get("input_tokens").asInt()).isEqualTo(c.get("usage").get("prompt_tokens").asInt());
        var notKept = client.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(baseUrl()
                + "/v1/responses/" + r.get("id").asString())).GET().build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        assertThat(notKept.statusCode()).isEqualTo(404);
        // the metric tells the endpoints apart although both were served as chat requests
        assertThat(counter("tqserve.requests.endpoint", "lane", "batched", "endpoint", "chat")).isEqualTo(chats + 1);
        assertThat(counter("tqserve.requests.endpoint", "lane", "batched", "endpoint", "responses")).isEqualTo(mine + 1);
    }

    @Test
    void badRequestsAre400sNamingTheResponsesField() throws Exception {
        String[][] cases = {
            {"{\"input\":\"hi\",\"tools\":[{\"type\":\"web_search\"}]}", "tools[0].type", "web_search"},
            {"{\"input\":\"hi\",\"tools\":[{\"type\":\"code_interpreter\",\"container\":{}}]}", "tools[0].type",
                "code_interpreter"},
            {"{\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\",\"image_url\":\"x\"}]}]}",
                "input[0].content[0].type", "input_image"},
            {"{\"input\":\"hi\",\"max_output_tokens\":0}", "max_output_tokens", "max_output_tokens"},
            {"{\"input\":\"hi\",\"text\":{\"format\":{\"type\":\"xml\"}}}", "text.format.type", "text.format"},
            {"{\"input\":\"hi\",\"background\":true}", "background", "background"},
            {"{\"input\":\"hi\",\"truncation\":\"auto\"}", "truncation", "truncation"},
            {"{\"model\":\"m\"}", "input", "input"},
            {"{\"input\":\"hi\",\"previous_response_id\":\"resp_nope\"}", "previous_response_id", "resp_nope"},
        };
        for (String[] c : cases) {
            var r = post("/v1/responses", c[0]);
            assertThat(r.statusCode()).as(c[0] + " -> " + r.body()).isIn(400, 404);
            JsonNode e = ToolsSdkTest.JSON.readTree(r.body()).get("error");
            assertThat(e.get("type").asString()).isEqualTo("invalid_request_error");
            assertThat(e.get("param").asString()).as(r.body()).isEqualTo(c[1]);
            assertThat(e.get("message").asString()).contains(c[2]);
        }
    }
}
