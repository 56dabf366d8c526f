package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import com.anthropic.client.AnthropicClient;
import com.anthropic.client.okhttp.AnthropicOkHttpClient;
import com.anthropic.core.JsonValue;
import com.anthropic.core.http.StreamResponse;
import com.anthropic.helpers.MessageAccumulator;
import com.anthropic.models.messages.ContentBlock;
import com.anthropic.models.messages.ContentBlockParam;
import com.anthropic.models.messages.Message;
import com.anthropic.models.messages.MessageCountTokensParams;
import com.anthropic.models.messages.MessageCreateParams;
import com.anthropic.models.messages.RawMessageStreamEvent;
import com.anthropic.models.messages.StopReason;
import com.anthropic.models.messages.Tool;
import com.anthropic.models.messages.ToolChoiceNone;
import com.anthropic.models.messages.ToolChoiceTool;
import com.anthropic.models.messages.ToolResultBlockParam;
import com.anthropic.models.messages.ToolUseBlock;
import com.networknt.schema.InputFormat;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The official Anthropic Java SDK against {@code /v1/messages} on the embedded model: text streamed and not, a
 * forced tool_use answered with a tool_result, stop_sequences, count_tokens.
 */
class AnthropicSdkTest extends ServingTestContext {
    AnthropicClient sdk;

    @BeforeEach
    void sdk() {
        sdk = AnthropicOkHttpClient.builder().baseUrl(baseUrl()).apiKey("unused").maxRetries(0)
                .putHeader("X-Tqserve-Lane", "batched").build();
    }

    static MessageCreateParams.Builder text(long maxTokens) {
        return MessageCreateParams.builder().model(OpenAiSdkTest.MODEL).maxTokens(maxTokens).temperature(0.0)
                .system("You are terse.").addUserMessage(OpenAiSdkTest.CHAT_TEXT);
    }

    static String text(Message m) {
        return m.content().stream().flatMap(b -> b.text().stream()).map(t -> t.text())
                .collect(Collectors.joining());
    }

    Message streamed(MessageCreateParams params, List<String> types) {
        MessageAccumulator acc = MessageAccumulator.create();
        try (StreamResponse<RawMessageStreamEvent> s = sdk.messages().createStreaming(params)) {
            s.stream().forEach(e -> {
                acc.accumulate(e);
                types.add(e.isMessageStart() ? "message_start"
                        : e.isContentBlockStart() ? "content_block_start" : e.isContentBlockDelta()
                        ? "content_block_delta" : e.isContentBlockStop() ? "content_block_stop"
                        : e.isMessageDelta() ? "message_delta" : e.isMessageStop() ? "message_stop" : "?");
            });
        }
        return acc.message();
    }

    @Test
    void textStreamedAndNotAgree() {
        Message m = sdk.messages().create(text(12).build());
        assertThat(m.id()).startsWith("msg_");
        assertThat(text(m)).isNotBlank();
        assertThat(m.stopReason()).hasValue(StopReason.MAX_TOKENS);
        assertThat(m.usage().outputTokens()).isEqualTo(12);
        assertThat(m.usage().inputTokens() + m.usage().cacheReadInputTokens().orElse(0L)).isGreaterThan(10);
        List<String> types = new ArrayList<>();
        Message s = streamed(text(12).build(), types);
        assertThat(text(s)).isEqualTo(text(m));
        assertThat(s.stopReason()).hasValue(StopReason.MAX_TOKENS);
        assertThat(s.usage().outputTokens()).isEqualTo(12);
        assertThat(types.getFirst()).isEqualTo("message_start");
        assertThat(types.subList(types.size() - 3, types.size()))
                .containsExactly("content_block_stop", "message_delta", "message_stop");
    }

    @Test
    void stopSequenceEndsTheTextAndIsReported() {
        String full = text(sdk.messages().create(text(24).build()));
        int mid = full.length() / 2;
        String stop = full.substring(mid, mid + 3);
        if (stop.isBlank()) {
            stop = full.substring(mid - 3, mid);
        }
        String expected = full.substring(0, full.indexOf(stop));
        Message m = sdk.messages().create(text(24).stopSequences(List.of(stop, "never-seen-zz")).build());
        assertThat(m.stopReason()).hasValue(StopReason.STOP_SEQUENCE);
        assertThat(m.stopSequence()).hasValue(stop);
        assertThat(text(m)).isEqualTo(expected);
        Message s = streamed(text(24).stopSequences(List.of(stop)).build(), new ArrayList<>());
        assertThat(s.stopReason()).hasValue(StopReason.STOP_SEQUENCE);
        assertThat(s.stopSequence()).hasValue(stop);
        assertThat(text(s)).isEqualTo(expected);
    }

    static Tool weatherTool() {
        @SuppressWarnings("unchecked")
        Map<String, Object> schema = ToolsSdkTest.JSON.readValue(ToolsSdkTest.WEATHER_SCHEMA, Map.class);
        Tool.InputSchema.Builder in = Tool.InputSchema.builder()
                .properties(JsonValue.from(schema.get("properties")))
                .required(List.of("city", "unit"));
        in.putAdditionalProperty("additionalProperties", JsonValue.from(false));
        return Tool.builder().name("get_weather").description("Current weather in a city").inputSchema(in.build())
                .build();
    }

    MessageCreateParams.Builder weather() {
        return MessageCreateParams.builder().model(OpenAiSdkTest.MODEL).maxTokens(110).temperature(1.0)
                .addUserMessage("What is the weather in Paris?").addTool(weatherTool())
                .toolChoice(ToolChoiceTool.builder().name("get_weather").build());
    }

    @Test
    void forcedToolUseThenToolResultThenAnswer() {
        Message first = sdk.messages().create(weather().build());
        assertThat(first.stopReason()).hasValue(StopReason.TOOL_USE);
        List<ToolUseBlock> uses = first.content().stream().flatMap(b -> b.toolUse().stream()).toList();
        assertThat(uses).hasSize(1);
        ToolUseBlock use = uses.getFirst();
        assertThat(use.id()).startsWith("toolu_");
        assertThat(use.name()).isEqualTo("get_weather");
        String input = ToolsSdkTest.JSON.writeValueAsString(use._input().convert(Object.class));
        assertThat(ToolsSdkTest.schema(ToolsSdkTest.WEATHER_SCHEMA).validate(input, InputFormat.JSON)).isEmpty();

        MessageCreateParams second = MessageCreateParams.builder().model(OpenAiSdkTest.MODEL).maxTokens(12)
                .temperature(0.0).addUserMessage("What is the weather in Paris?").addTool(weatherTool())
                .addMessage(first)
                .addUserMessageOfBlockParams(List.of(ContentBlockParam.ofToolResult(ToolResultBlockParam.builder()
                        .toolUseId(use.id()).content("sunny, 21 degrees").build())))
                .toolChoice(ToolChoiceNone.builder().build()).build();
        Message answer = sdk.messages().create(second);
        assertThat(answer.content().stream().filter(ContentBlock::isToolUse)).isEmpty();
        assertThat(text(answer)).isNotBlank();
        assertThat(answer.usage().inputTokens() + answer.usage().cacheReadInputTokens().orElse(0L))
                .isGreaterThan(first.usage().inputTokens() + first.usage().cacheReadInputTokens().orElse(0L) + 20);
        // the same call streamed: one tool_use block whose input_json_deltas add up to the whole input
        Message s = streamed(weather().build(), new ArrayList<>());
        assertThat(s.stopReason()).hasValue(StopReason.TOOL_USE);
        ToolUseBlock streamedUse = s.content().stream().flatMap(b -> b.toolUse().stream()).findFirst().orElseThrow();
        String streamedInput = ToolsSdkTest.JSON.writeValueAsString(streamedUse._input().convert(Object.class));
        assertThat(ToolsSdkTest.schema(ToolsSdkTest.WEATHER_SCHEMA).validate(streamedInput, InputFormat.JSON))
                .isEmpty();
    }

    @Test
    void countTokensIsThePromptOfTheSameRequest() {
        long counted = sdk.messages().countTokens(MessageCountTokensParams.builder().model(OpenAiSdkTest.MODEL)
                .system("You are terse.").addUserMessage(OpenAiSdkTest.CHAT_TEXT).build()).inputTokens();
        Message m = sdk.messages().create(text(2).build());
        assertThat(counted).isEqualTo(m.usage().inputTokens() + m.usage().cacheReadInputTokens().orElse(0L));
        long withTool = sdk.messages().countTokens(MessageCountTokensParams.builder().model(OpenAiSdkTest.MODEL)
                .system("You are terse.").addUserMessage(OpenAiSdkTest.CHAT_TEXT).addTool(weatherTool()).build())
                .inputTokens();
        assertThat(withTool).isGreaterThan(counted + 20);
    }
}
