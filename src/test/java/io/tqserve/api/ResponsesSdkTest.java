package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import com.networknt.schema.InputFormat;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.JsonValue;
import com.openai.core.http.StreamResponse;
import com.openai.models.responses.EasyInputMessage;
import com.openai.models.responses.FunctionTool;
import com.openai.models.responses.Response;
import com.openai.models.responses.ResponseCreateParams;
import com.openai.models.responses.ResponseFormatTextJsonSchemaConfig;
import com.openai.models.responses.ResponseFunctionToolCall;
import com.openai.models.responses.ResponseInputItem;
import com.openai.models.responses.ResponseOutputItem;
import com.openai.models.responses.ResponseStatus;
import com.openai.models.responses.ResponseStreamEvent;
import com.openai.models.responses.ResponseTextConfig;
import com.openai.models.responses.ToolChoiceFunction;
import com.openai.models.responses.ToolChoiceOptions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The official OpenAI Java SDK's {@code responses()} against {@code /v1/responses} on the embedded model: text
 * streamed and not, a forced function call answered with function_call_output, a json_schema text format,
 * previous_response_id continuing from the prompt cache.
 */
class ResponsesSdkTest extends ServingTestContext {
    OpenAIClient sdk;

    @BeforeEach
    void sdk() {
        sdk = OpenAIOkHttpClient.builder().baseUrl(baseUrl() + "/v1").apiKey("unused").maxRetries(0).build();
    }

    static ResponseCreateParams.Builder text(long maxTokens) {
        return ResponseCreateParams.builder().model(OpenAiSdkTest.MODEL).instructions("You are terse.")
                .input(OpenAiSdkTest.CHAT_TEXT).maxOutputTokens(maxTokens).temperature(0.0)
                .putAdditionalBodyProperty("tqserve_lane", JsonValue.from("batched"));
    }

    static String text(Response r) {
        return r.output().stream().flatMap(i -> i.message().stream()).flatMap(m -> m.content().stream())
                .flatMap(c -> c.outputText().stream()).map(t -> t.text()).collect(Collectors.joining());
    }

    @Test
    void textStreamedAndNotAgree() {
        Response r = sdk.responses().create(text(12).build());
        assertThat(r.id()).startsWith("resp_");
        assertThat(r.status()).hasValue(ResponseStatus.INCOMPLETE);
        assertThat(r.incompleteDetails().orElseThrow().reason().orElseThrow().asString())
                .isEqualTo("max_output_tokens");
        assertThat(text(r)).isNotBlank();
        assertThat(r.usage().orElseThrow().outputTokens()).isEqualTo(12);
        StringBuilder deltas = new StringBuilder();
        List<String> types = new ArrayList<>();
        Response[] last = {null};
        try (StreamResponse<ResponseStreamEvent> s = sdk.responses().createStreaming(text(12).build())) {
            s.stream().forEach(e -> {
                e.outputTextDelta().ifPresent(d -> deltas.append(d.delta()));
                e.incomplete().ifPresent(i -> last[0] = i.response());
                types.add(e.isCreated() ? "created" : e.isInProgress() ? "in_progress" : e.isIncomplete()
                        ? "incomplete" : "other");
            });
        }
        assertThat(deltas.toString()).isEqualTo(text(r));
        assertThat(text(last[0])).isEqualTo(text(r));
        assertThat(last[0].usage().orElseThrow().outputTokens()).isEqualTo(12);
        assertThat(types.subList(0, 2)).containsExactly("created", "in_progress");
        assertThat(types.getLast()).isEqualTo("incomplete");
    }

    static FunctionTool weatherTool() {
        @SuppressWarnings("unchecked")
        Map<String, Object> schema = ToolsSdkTest.JSON.readValue(ToolsSdkTest.WEATHER_SCHEMA, Map.class);
        FunctionTool.Parameters.Builder p = FunctionTool.Parameters.builder();
        schema.forEach((k, v) -> p.putAdditionalProperty(k, JsonValue.from(v)));
        return FunctionTool.builder().name("get_weather").description("Current weather in a city")
                .parameters(p.build()).strict(true).build();
    }

    ResponseCreateParams.Builder weather(long seed) {
        return ResponseCreateParams.builder().model(OpenAiSdkTest.MODEL).input("What is the weather in Paris?")
                .addTool(weatherTool()).toolChoice(ToolChoiceFunction.builder().name("get_weather").build())
                .maxOutputTokens(110).temperature(1.0).putAdditionalBodyProperty("seed", JsonValue.from(seed));
    }

    @Test
    void forcedFunctionCallThenFunctionCallOutputThenAnswer() {
        Response first = sdk.responses().create(weather(5).build());
        assertThat(first.status()).hasValue(ResponseStatus.COMPLETED);
        List<ResponseFunctionToolCall> calls = first.output().stream().flatMap(i -> i.functionCall().stream())
                .toList();
        assertThat(calls).hasSize(1);
        ResponseFunctionToolCall call = calls.getFirst();
        assertThat(call.name()).isEqualTo("get_weather");
        assertThat(call.callId()).startsWith("call_");
        assertThat(call.id().orElseThrow()).startsWith("fc_");
        assertThat(ToolsSdkTest.schema(ToolsSdkTest.WEATHER_SCHEMA).validate(call.arguments(), InputFormat.JSON))
                .isEmpty();

        List<ResponseInputItem> input = List.of(
                ResponseInputItem.ofEasyInputMessage(EasyInputMessage.builder().role(EasyInputMessage.Role.USER)
                        .content("What is the weather in Paris?").build()),
                ResponseInputItem.ofFunctionCall(call),
                ResponseInputItem.ofFunctionCallOutput(ResponseInputItem.FunctionCallOutput.builder()
                        .callId(call.callId()).output("sunny, 21 degrees").build()));
        Response answer = sdk.responses().create(ResponseCreateParams.builder().model(OpenAiSdkTest.MODEL)
                .inputOfResponse(input).addTool(weatherTool()).toolChoice(ToolChoiceOptions.NONE)
                .maxOutputTokens(12).temperature(0.0).build());
        assertThat(answer.output().stream().filter(ResponseOutputItem::isFunctionCall)).isEmpty();
        assertThat(text(answer)).isNotBlank();
        assertThat(answer.usage().orElseThrow().inputTokens())
                .isGreaterThan(first.usage().orElseThrow().inputTokens() + 20);

        // streamed: the call arrives as added, arguments delta and done, item done
        StringBuilder args = new StringBuilder();
        String[] done = {null};
        try (StreamResponse<ResponseStreamEvent> s = sdk.responses().createStreaming(weather(6).build())) {
            s.stream().forEach(e -> {
                e.functionCallArgumentsDelta().ifPresent(d -> args.append(d.delta()));
                e.functionCallArgumentsDone().ifPresent(d -> done[0] = d.arguments());
            });
        }
        assertThat(done[0]).isEqualTo(args.toString());
        assertThat(ToolsSdkTest.schema(ToolsSdkTest.WEATHER_SCHEMA).validate(done[0], InputFormat.JSON)).isEmpty();
    }

    @Test
    void jsonSchemaTextFormatValidates() {
        @SuppressWarnings("unchecked")
        Map<String, Object> schema = ToolsSdkTest.JSON.readValue(ToolsSdkTest.MOVIE_SCHEMA, Map.class);
        ResponseFormatTextJsonSchemaConfig.Schema.Builder sb = ResponseFormatTextJsonSchemaConfig.Schema.builder();
        schema.forEach((k, v) -> sb.putAdditionalProperty(k, JsonValue.from(v)));
        ResponseTextConfig format = ResponseTextConfig.builder().format(ResponseFormatTextJsonSchemaConfig.builder()
                .name("movie").schema(sb.build()).strict(true).build()).build();
        for (int seed = 0; seed < 3; seed++) {
            Response r = sdk.responses().create(ResponseCreateParams.builder().model(OpenAiSdkTest.MODEL)
                    .input("Describe a movie as JSON.").text(format).maxOutputTokens(120).temperature(1.0)
                    .putAdditionalBodyProperty("seed", JsonValue.from(seed))
                    .putAdditionalBodyProperty("tqserve_lane", JsonValue.from("batched")).build());
            assertThat(ToolsSdkTest.schema(ToolsSdkTest.MOVIE_SCHEMA).validate(text(r), InputFormat.JSON))
                    .as(text(r)).isEmpty();
        }
    }

    @Test
    void previousResponseIdContinuesFromTheCachedPrefix() {
        Response first = sdk.responses().create(text(8).build());
        Response second = sdk.responses().create(ResponseCreateParams.builder().model(OpenAiSdkTest.MODEL)
                .instructions("You are terse.").previousResponseId(first.id()).input("Say more.")
                .maxOutputTokens(8).temperature(0.0)
                .putAdditionalBodyProperty("tqserve_lane", JsonValue.from("batched")).build());
        assertThat(second.previousResponseId()).hasValue(first.id());
        long firstPrompt = first.usage().orElseThrow().inputTokens();
        assertThat(second.usage().orElseThrow().inputTokens()).isGreaterThan(firstPrompt + 8);
        assertThat(second.usage().orElseThrow().inputTokensDetails().cachedTokens()).isPositive();
        // the stored response is answered by GET; DELETE removes it
        Response got = sdk.responses().retrieve(first.id());
        assertThat(text(got)).isEqualTo(text(first));
        sdk.responses().delete(first.id());
        assertThat(org.assertj.core.api.Assertions.catchThrowable(() -> sdk.responses().retrieve(first.id())))
                .isInstanceOf(com.openai.errors.NotFoundException.class);
    }
}
