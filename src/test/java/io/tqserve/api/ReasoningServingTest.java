package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.config.TqserveApplication;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import tools.jackson.databind.JsonNode;

/**
 * Reasoning end to end over HTTP, on the embedded model served with a reasoning template: its generation prompt
 * opens a {@code <think>} block (as Qwen3's thinking-only templates do) unless {@code enable_thinking} is false,
 * which closes it at once. Chat completions stream {@code reasoning_content}, a {@code thinking_token_budget} ends
 * it with the template's marker after exactly that many tokens and the content follows; Anthropic's Messages API
 * streams a {@code thinking} block capped by {@code budget_tokens}, then the text block; the Responses API returns
 * a reasoning item and counts its tokens.
 */
@SpringBootTest(classes = {TqserveApplication.class, LaneProbe.class},
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"tqserve.lanes.turbo.enabled=false"})
class ReasoningServingTest extends ServingClient {
    @DynamicPropertySource
    static void model(DynamicPropertyRegistry registry) throws Exception {
        String template = MarkerTokenModel.JSON.readTree(Path.of("models/tiny-llama-h128/tokenizer_config.json")
                .toFile()).get("chat_template").asString();
        String prompt = "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
        assertThat(template).endsWith(prompt);
        String thinking = template.substring(0, template.length() - prompt.length())
                + "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>\\n' }}"
                + "{% if enable_thinking is defined and enable_thinking is false %}{{ '\\n</think>\\n\\n' }}"
                + "{% endif %}{% endif %}";
        Path dir = MarkerTokenModel.create(thinking, Map.of());
        registry.add("tqserve.model.path", dir::toString);
    }

    static final String USER = "\"messages\":[{\"role\":\"user\",\"content\":\"What does ls do?\"}]";

    /** A streamed chat response: reasoning and content deltas in order, and the finish reason. */
    record ChatStream(List<String> kinds, String reasoning, String content, String finishReason) {
        static ChatStream of(String body) {
            List<String> kinds = new ArrayList<>();
            StringBuilder reasoning = new StringBuilder();
            StringBuilder content = new StringBuilder();
            String reason = null;
            for (String frame : SseFormatTest.frames(body)) {
                String data = frame.substring("data: ".length());
                if (data.equals("[DONE]")) {
                    continue;
                }
                for (JsonNode choice : MarkerTokenModel.JSON.readTree(data).get("choices")) {
                    JsonNode delta = choice.get("delta");
                    if (delta.get("reasoning_content") instanceof JsonNode r && r.isString() && !r.asString().isEmpty()) {
                        kinds.add("reasoning");
                        reasoning.append(r.asString());
                    }
                    if (delta.get("content") instanceof JsonNode c && c.isString() && !c.asString().isEmpty()) {
                        kinds.add("content");
                        content.append(c.asString());
                    }
                    if (choice.get("finish_reason") instanceof JsonNode f && f.isString()) {
                        reason = f.asString();
                    }
                }
            }
            return new ChatStream(kinds, reasoning.toString(), content.toString(), reason);
        }
    }

    java.net.http.HttpResponse<String> post(String path, String body) throws Exception {
        return ChatFormatServingTest.post(this, path, body);
    }

    @Test
    void aThinkingBudgetEndsTheStreamedReasoningAtTheBudgetAndTheContentFollows() throws Exception {
        int budget = 12;
        // the first `budget` tokens of greedy reasoning, unbudgeted
        var head = post("/v1/chat/completions", "{" + USER + ",\"max_tokens\":" + budget + ",\"temperature\":0,"
                + "\"stream\":true}");
        assertThat(head.statusCode()).as(head.body()).isEqualTo(200);
        ChatStream free = ChatStream.of(head.body());
        assertThat(free.kinds()).isNotEmpty().containsOnly("reasoning");
        assertThat(free.content()).isEmpty();
        assertThat(free.finishReason()).isEqualTo("length");
        // the same request with the budget and room to answer: the same reasoning, cut there, then content
        var r = post("/v1/chat/completions", "{" + USER + ",\"max_tokens\":40,\"temperature\":0,\"stream\":true,"
                + "\"thinking_token_budget\":" + budget + "}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        ChatStream s = ChatStream.of(r.body());
        assertThat(s.reasoning()).isEqualTo(free.reasoning());
        assertThat(s.content()).isNotBlank().doesNotContain("<think>", "</think>");
        int firstContent = s.kinds().indexOf("content");
        assertThat(firstContent).isPositive();
        assertThat(s.kinds().subList(0, firstContent)).containsOnly("reasoning");
        assertThat(s.kinds().subList(firstContent, s.kinds().size())).containsOnly("content");
        assertThat(s.finishReason()).isEqualTo("length");
        // non-streamed: the same split
        var whole = post("/v1/chat/completions", "{" + USER + ",\"max_tokens\":40,\"temperature\":0,"
                + "\"thinking_token_budget\":" + budget + "}");
        JsonNode m = MarkerTokenModel.JSON.readTree(whole.body()).get("choices").get(0).get("message");
        assertThat(m.get("reasoning_content").asString()).isEqualTo(s.reasoning());
        assertThat(m.get("content").asString()).isEqualTo(s.content());
    }

    @Test
    void withThinkingOffTheTemplateClosesReasoningAndAllIsContent() throws Exception {
        var r = post("/v1/chat/completions", "{" + USER + ",\"max_tokens\":10,\"temperature\":0,\"stream\":true,"
                + "\"chat_template_kwargs\":{\"enable_thinking\":false}}");
        ChatStream s = ChatStream.of(r.body());
        assertThat(s.reasoning()).isEmpty();
        assertThat(s.content()).isNotBlank();
    }

    @Test
    void messagesStreamAThinkingBlockCappedByBudgetTokensThenTheText() throws Exception {
        var r = ChatFormatServingTest.post(this, "/v1/messages", "{\"model\":\"tiny-llama-h128\",\"max_tokens\":1040,"
                + "\"temperature\":0,\"stream\":true,\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024},"
                + USER + "}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        List<MessagesSseTest.Event> ev = MessagesSseTest.events(r.body());
        List<String> blocks = new ArrayList<>();
        StringBuilder thinking = new StringBuilder();
        StringBuilder text = new StringBuilder();
        for (MessagesSseTest.Event e : ev) {
            switch (e.name()) {
                case "content_block_start" -> {
                    assertThat(e.data().get("index").asInt()).isEqualTo(blocks.size());
                    blocks.add(e.data().get("content_block").get("type").asString());
                }
                case "content_block_delta" -> {
                    JsonNode d = e.data().get("delta");
                    assertThat(e.data().get("index").asInt()).isEqualTo(blocks.size() - 1);
                    switch (d.get("type").asString()) {
                        case "thinking_delta" -> thinking.append(d.get("thinking").asString());
                        case "text_delta" -> text.append(d.get("text").asString());
                        default -> throw new AssertionError(d.toString());
                    }
                }
                default -> {
                }
            }
        }
        assertThat(blocks).containsExactly("thinking", "text");
        assertThat(thinking.toString()).isNotBlank();
        assertThat(text.toString()).isNotBlank().doesNotContain("</think>");
        JsonNode delta = ev.get(ev.size() - 2).data();
        assertThat(delta.get("delta").get("stop_reason").asString()).isEqualTo("max_tokens");
        // budget_tokens below Anthropic's floor is a 400 naming thinking
        var low = ChatFormatServingTest.post(this, "/v1/messages", "{\"model\":\"m\",\"max_tokens\":64,"
                + "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":16}," + USER + "}");
        assertThat(low.statusCode()).isEqualTo(400);
        assertThat(MarkerTokenModel.JSON.readTree(low.body()).get("error").get("message").asString())
                .contains("budget_tokens");
    }

    @Test
    void responsesReturnAReasoningItemAndCountItsTokens() throws Exception {
        var r = post("/v1/responses", "{\"model\":\"tiny-llama-h128\",\"max_output_tokens\":10,\"temperature\":0,"
                + "\"store\":false,\"reasoning\":{\"effort\":\"low\"},\"input\":\"What does ls do?\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode body = MarkerTokenModel.JSON.readTree(r.body());
        JsonNode item = body.get("output").get(0);
        assertThat(item.get("type").asString()).isEqualTo("reasoning");
        assertThat(item.get("content").get(0).get("type").asString()).isEqualTo("reasoning_text");
        assertThat(item.get("content").get(0).get("text").asString()).isNotBlank();
        // all 10 tokens were reasoning (no end marker within them)
        assertThat(body.get("usage").get("output_tokens_details").get("reasoning_tokens").asInt()).isEqualTo(10);
        assertThat(body.get("usage").get("output_tokens").asInt()).isEqualTo(10);
        // streamed: reasoning_text deltas, then its done event
        var s = post("/v1/responses", "{\"model\":\"tiny-llama-h128\",\"max_output_tokens\":10,\"temperature\":0,"
                + "\"store\":false,\"stream\":true,\"input\":\"What does ls do?\"}");
        assertThat(s.body()).contains("event: response.reasoning_text.delta", "event: response.reasoning_text.done");
    }
}
