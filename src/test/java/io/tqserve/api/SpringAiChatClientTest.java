package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import com.networknt.schema.InputFormat;
import io.swagger.v3.oas.annotations.media.Schema;
import io.tqserve.model.Model;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import okhttp3.Interceptor;
import okhttp3.Response;
import okio.Buffer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.client.ChatClientRequest;
import org.springframework.ai.chat.client.ChatClientResponse;
import org.springframework.ai.chat.client.advisor.api.CallAdvisor;
import org.springframework.ai.chat.client.advisor.api.CallAdvisorChain;
import org.springframework.ai.chat.messages.ToolResponseMessage;
import org.springframework.ai.converter.BeanOutputConverter;
import org.springframework.ai.openai.OpenAiChatModel;
import org.springframework.ai.openai.OpenAiChatOptions;
import org.springframework.ai.tool.annotation.Tool;
import org.springframework.ai.tool.annotation.ToolParam;
import tools.jackson.databind.JsonNode;

/**
 * Spring AI 2.x's {@code ChatClient} over its OpenAI chat model (which is built on the openai-java SDK), pointed at
 * the test server: a {@code @Tool} method is called by the embedded model and its result goes back to the model,
 * and {@code .entity(Record.class)} with provider-native structured output returns a populated record. The model
 * and client are built by hand (no Spring AI auto-configuration in the project's application contexts). Every HTTP
 * exchange is recorded, so the assertions are on what Spring AI actually sent and received.
 */
class SpringAiChatClientTest extends ServingTestContext {

    /** The request and response bodies of every call Spring AI makes, in order. */
    final List<JsonNode[]> exchanges = new CopyOnWriteArrayList<>();
    ChatClient chat;

    @BeforeEach
    void chatClient() {
        exchanges.clear();
        Interceptor recorder = c -> {
            Buffer sent = new Buffer();
            if (c.request().body() != null) {
                c.request().body().writeTo(sent);
            }
            Response r = c.proceed(c.request());
            String received = r.peekBody(Long.MAX_VALUE).string();
            exchanges.add(new JsonNode[] {ToolsSdkTest.JSON.readTree(sent.readUtf8()), received.startsWith("{")
                ? ToolsSdkTest.JSON.readTree(received) : ToolsSdkTest.JSON.getNodeFactory().stringNode(received)});
            return r;
        };
        OpenAiChatModel model = OpenAiChatModel.builder()
                .options(OpenAiChatOptions.builder().baseUrl(baseUrl() + "/v1").apiKey("unused").maxRetries(0)
                        .model(OpenAiSdkTest.MODEL).temperature(0.0).seed(7).build())
                .httpClientBuilderCustomizer(b -> b.interceptor(recorder)).build();
        chat = ChatClient.builder(model).build();
    }

    record Weather(String city, int celsius, String sky) {
    }

    static class WeatherTools {
        final List<String> asked = new CopyOnWriteArrayList<>();

        @Tool(name = "get_weather", description = "Current weather in a city")
        Weather weather(@ToolParam(description = "the city") String city) {
            asked.add(city);
            return new Weather(city, 21, "sunny");
        }
    }

    /**
     * The embedded model calls a tool only when forced ({@code tool_choice}); once a tool result is in the
     * conversation the follow-up must let it answer, or a forced call would loop. Spring AI's tool loop
     * ({@code ToolCallingAdvisor}) re-sends the same options every round, so this advisor, ordered inside that
     * loop, relaxes {@code tool_choice} to {@code none} for rounds that carry a tool result.
     */
    static final AnswerAfterToolResult ANSWER_AFTER_TOOL_RESULT = new AnswerAfterToolResult();

    static final class AnswerAfterToolResult implements CallAdvisor,
            org.springframework.ai.chat.client.advisor.api.StreamAdvisor {
        static ChatClientRequest relaxed(ChatClientRequest request) {
            boolean hasResult = request.prompt().getInstructions().stream()
                    .anyMatch(m -> m instanceof ToolResponseMessage);
            if (hasResult && request.prompt().getOptions() instanceof OpenAiChatOptions o) {
                return request.mutate().prompt(request.prompt().mutate()
                        .chatOptions(o.mutate().toolChoice("none").build()).build()).build();
            }
            return request;
        }

        @Override
        public ChatClientResponse adviseCall(ChatClientRequest request, CallAdvisorChain chain) {
            return chain.nextCall(relaxed(request));
        }

        @Override
        public reactor.core.publisher.Flux<ChatClientResponse> adviseStream(ChatClientRequest request,
                org.springframework.ai.chat.client.advisor.api.StreamAdvisorChain chain) {
            return chain.nextStream(relaxed(request));
        }

        @Override
        public String getName() {
            return "answer after tool result";
        }

        @Override
        public int getOrder() {
            return 0; // after ToolCallingAdvisor (HIGHEST_PRECEDENCE + 300): runs once per round
        }
    }

    @Test
    void streamedChatClientRunsTheToolAndAnswersWithItsResult() {
        WeatherTools tools = new WeatherTools();
        List<String> parts = chat.prompt().user("What is the weather in Paris?").tools(tools)
                .advisors(ANSWER_AFTER_TOOL_RESULT)
                .options(OpenAiChatOptions.builder().toolChoice("required").maxCompletionTokens(90)
                        .parallelToolCalls(false))
                .stream().content().collectList().block(java.time.Duration.ofSeconds(180));

        assertThat(exchanges).hasSize(2);
        assertThat(exchanges.get(0)[0].get("stream").asBoolean()).isTrue();
        // the call streamed as OpenAI streams it: a header, then argument fragments
        ToolStream first = ToolStream.of(exchanges.get(0)[1].asString());
        assertThat(first.calls()).hasSize(1);
        assertThat(first.fragments().getFirst()).isGreaterThan(1);
        assertThat(first.finishReason()).isEqualTo("tool_calls");
        String city = ToolsSdkTest.JSON.readTree(first.calls().getFirst().get(2)).get("city").asString();
        // Spring AI assembled the fragments, ran the @Tool method and sent its result back
        assertThat(tools.asked).containsExactly(city);
        JsonNode messages = exchanges.get(1)[0].get("messages");
        JsonNode toolMessage = messages.get(messages.size() - 1);
        assertThat(toolMessage.get("role").asString()).isEqualTo("tool");
        assertThat(toolMessage.get("tool_call_id").asString()).isEqualTo(first.calls().getFirst().get(0));
        assertThat(ToolsSdkTest.JSON.readTree(toolMessage.get("content").asString()))
                .isEqualTo(ToolsSdkTest.JSON.valueToTree(new Weather(city, 21, "sunny")));
        // the streamed answer after the result is what the client's stream carried
        ToolStream second = ToolStream.of(exchanges.get(1)[1].asString());
        assertThat(second.calls()).isEmpty();
        assertThat(String.join("", parts)).isNotBlank().isEqualTo(second.content());
    }

    @Test
    void toolAnnotatedMethodIsCalledAndItsResultGoesBackToTheModel() throws Exception {
        WeatherTools tools = new WeatherTools();
        String answer = chat.prompt().user("What is the weather in Paris?").tools(tools)
                .advisors(ANSWER_AFTER_TOOL_RESULT)
                // one call per round: with parallel calls allowed the model may also write a second block
                .options(OpenAiChatOptions.builder().toolChoice("required").maxCompletionTokens(90)
                        .parallelToolCalls(false))
                .call().content();

        assertThat(exchanges).hasSize(2);
        JsonNode firstSent = exchanges.get(0)[0];
        JsonNode firstReply = exchanges.get(0)[1].get("choices").get(0);
        assertThat(firstSent.get("tool_choice").asString()).isEqualTo("required");
        assertThat(firstSent.get("tools").get(0).get("function").get("name").asString()).isEqualTo("get_weather");
        assertThat(firstReply.get("finish_reason").asString()).isEqualTo("tool_calls");
        JsonNode call = firstReply.get("message").get("tool_calls").get(0);
        String city = ToolsSdkTest.JSON.readTree(call.get("function").get("arguments").asString()).get("city")
                .asString();
        // Spring AI parsed the call and ran the @Tool method with the model's argument
        assertThat(tools.asked).containsExactly(city);

        JsonNode secondSent = exchanges.get(1)[0];
        JsonNode messages = secondSent.get("messages");
        JsonNode toolMessage = messages.get(messages.size() - 1);
        assertThat(toolMessage.get("role").asString()).isEqualTo("tool");
        assertThat(toolMessage.get("tool_call_id").asString()).isEqualTo(call.get("id").asString());
        assertThat(ToolsSdkTest.JSON.readTree(toolMessage.get("content").asString()))
                .isEqualTo(ToolsSdkTest.JSON.valueToTree(new Weather(city, 21, "sunny")));
        assertThat(messages.get(messages.size() - 2).get("tool_calls").get(0).get("id").asString())
                .isEqualTo(call.get("id").asString());
        assertThat(secondSent.get("tool_choice").asString()).isEqualTo("none");

        // the tool result is in the prompt the model answered: render that request as the server does
        Model served = runtime.loaded().orElseThrow().model();
        int[] prompt = new PromptBuilder(new StructuredOutput(served), new ApiSettings(List.of(), false,
                512, java.time.Duration.ofSeconds(5), java.time.Duration.ofSeconds(1))).prepare(new RequestParser(served.config().vocabSize(), 256,
                1 << 20).parse(secondSent, Endpoint.CHAT, null)).generation().promptTokens();
        JsonNode secondReply = exchanges.get(1)[1];
        assertThat(secondReply.get("usage").get("prompt_tokens").asInt()).isEqualTo(prompt.length);
        assertThat(served.tokenizer().decode(prompt)).contains("<tool_response>\n" + toolMessage.get("content")
                .asString() + "\n</tool_response>");

        // the model's answer after the tool result is what ChatClient returns
        JsonNode finalChoice = secondReply.get("choices").get(0);
        assertThat(finalChoice.get("finish_reason").asString()).isIn("stop", "length");
        assertThat(finalChoice.get("message").has("tool_calls")).isFalse();
        assertThat(answer).isNotBlank().isEqualTo(finalChoice.get("message").get("content").asString());
    }

    enum Audience { USER, ADMIN }

    record ManPage(@Schema(maxLength = 12) String command, @Schema(minimum = "1", maximum = "8") int section,
            Audience audience, boolean hasExamples) {
    }

    @Test
    void entityWithProviderStructuredOutputReturnsAPopulatedRecord() {
        ManPage page = chat.prompt().user("Describe the ls command's man page.")
                .options(OpenAiChatOptions.builder().maxCompletionTokens(80).temperature(1.0))
                .call().entity(ManPage.class, spec -> spec.useProviderStructuredOutput());

        assertThat(exchanges).hasSize(1);
        JsonNode sent = exchanges.getFirst()[0];
        String schema = new BeanOutputConverter<>(ManPage.class).getJsonSchema();
        JsonNode format = sent.get("response_format");
        assertThat(format.get("type").asString()).isEqualTo("json_schema");
        assertThat(format.get("json_schema").get("schema")).isEqualTo(ToolsSdkTest.JSON.readTree(schema));
        // native structured output: no format instructions appended to the prompt
        assertThat(sent.get("messages").toString()).doesNotContain("JSON Schema");

        String content = exchanges.getFirst()[1].get("choices").get(0).get("message").get("content").asString();
        assertThat(ToolsSdkTest.schema(schema).validate(content, InputFormat.JSON)).as(content).isEmpty();
        assertThat(page).isNotNull();
        assertThat(page.command()).isNotNull().hasSizeLessThanOrEqualTo(12);
        assertThat(page.section()).isBetween(1, 8);
        assertThat(page.audience()).isNotNull();
        assertThat(page).isEqualTo(ToolsSdkTest.JSON.readValue(content, ManPage.class));
    }
}
