package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import com.networknt.schema.InputFormat;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.JsonValue;
import com.openai.core.http.StreamResponse;
import com.openai.models.FunctionDefinition;
import com.openai.models.FunctionParameters;
import com.openai.models.ResponseFormatJsonSchema;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionAssistantMessageParam;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionFunctionTool;
import com.openai.models.chat.completions.ChatCompletionMessageFunctionToolCall;
import com.openai.models.chat.completions.ChatCompletionMessageToolCall;
import com.openai.models.chat.completions.ChatCompletionNamedToolChoice;
import com.openai.models.chat.completions.ChatCompletionToolChoiceOption;
import com.openai.models.chat.completions.ChatCompletionToolMessageParam;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Tool calling and structured outputs through the official OpenAI Java SDK against the embedded model (whose
 * ChatML template renders tools in the Hermes style): the output is held to the schema by constrained decoding,
 * so even this small model at temperature 1.0 produces calls and documents that validate.
 */
class ToolsSdkTest extends ServingTestContext {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String WEATHER_SCHEMA = """
            {"type": "object", "properties": {
              "city": {"type": "string", "maxLength": 20},
              "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
             "required": ["city", "unit"], "additionalProperties": false}""";
    static final String MOVIE_SCHEMA = """
            {"type": "object", "properties": {
              "name": {"type": "string", "maxLength": 6},
              "score": {"type": "number", "minimum": 0, "maximum": 5},
              "year": {"type": "integer", "minimum": 1900, "maximum": 2100},
              "kind": {"type": "string", "enum": ["drama", "comedy"]},
              "cast": {"type": "array", "maxItems": 2, "items": {"type": "object", "properties": {
                  "id": {"type": "integer", "minimum": 0, "maximum": 99}, "lead": {"type": "boolean"}},
                "required": ["id", "lead"], "additionalProperties": false}},
              "meta": {"type": "object", "properties": {"lang": {"type": "string", "enum": ["en", "fr"]}},
                "required": ["lang"], "additionalProperties": false}},
             "required": ["name", "score", "year", "kind", "cast", "meta"], "additionalProperties": false}""";

    /**
     * {@link #MOVIE_SCHEMA} with a {@code pattern}, a {@code $ref} into {@code $defs} and a recursive definition (a
     * cast member's optional mentor is another cast member).
     */
    static final String MOVIE_REF_SCHEMA = """
            {"type": "object", "$defs": {
              "member": {"type": "object", "properties": {
                  "id": {"type": "integer", "minimum": 0, "maximum": 99}, "lead": {"type": "boolean"},
                  "mentor": {"$ref": "#/$defs/member"}},
                "required": ["id", "lead"], "additionalProperties": false}},
             "properties": {
              "name": {"type": "string", "maxLength": 6},
              "code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{3}$"},
              "score": {"type": "number", "minimum": 0, "maximum": 5},
              "year": {"type": "integer", "minimum": 1900, "maximum": 2100},
              "kind": {"type": "string", "enum": ["drama", "comedy"]},
              "cast": {"type": "array", "maxItems": 2, "items": {"$ref": "#/$defs/member"}},
              "meta": {"type": "object", "properties": {"lang": {"type": "string", "enum": ["en", "fr"]}},
                "required": ["lang"], "additionalProperties": false}},
             "required": ["name", "code", "score", "year", "kind", "cast", "meta"], "additionalProperties": false}""";

    OpenAIClient sdk;

    @BeforeEach
    void sdk() {
        sdk = OpenAIOkHttpClient.builder().baseUrl(baseUrl() + "/v1").apiKey("unused").maxRetries(0).build();
    }

    static Schema schema(String json) {
        return SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12).getSchema(json, InputFormat.JSON);
    }

    static ChatCompletionFunctionTool weatherTool() {
        return ChatCompletionFunctionTool.builder().function(FunctionDefinition.builder().name("get_weather")
                .description("Current weather in a city").parameters(parameters(WEATHER_SCHEMA)).build()).build();
    }

    @SuppressWarnings("unchecked")
    static FunctionParameters parameters(String schema) {
        FunctionParameters.Builder b = FunctionParameters.builder();
        ((Map<String, Object>) JSON.readValue(schema, Map.class)).forEach((k, v) -> b.putAdditionalProperty(k,
                JsonValue.from(v)));
        return b.build();
    }

    ChatCompletionCreateParams.Builder weatherRequest(long seed) {
        return ChatCompletionCreateParams.builder().model(OpenAiSdkTest.MODEL)
                .addUserMessage("What is the weather in Paris?").addTool(weatherTool())
                .toolChoice(ChatCompletionToolChoiceOption.ofNamedToolChoice(ChatCompletionNamedToolChoice.builder()
                        .function(ChatCompletionNamedToolChoice.Function.builder().name("get_weather").build())
                        .build()))
                .maxCompletionTokens(110).temperature(1.0).seed(seed);
    }

    @Test
    void namedToolCallIsReturnedAsToolCallsAndValidates() {
        Schema weather = schema(WEATHER_SCHEMA);
        for (long seed = 1; seed <= 3; seed++) {
            ChatCompletion c = sdk.chat().completions().create(weatherRequest(seed).build());
            ChatCompletion.Choice choice = c.choices().getFirst();
            assertThat(choice.finishReason()).isEqualTo(ChatCompletion.Choice.FinishReason.TOOL_CALLS);
            assertThat(choice.message().content()).isEmpty();
            List<ChatCompletionMessageToolCall> calls = choice.message().toolCalls().orElseThrow();
            assertThat(calls).hasSize(1);
            ChatCompletionMessageFunctionToolCall call = calls.getFirst().asFunction();
            assertThat(call.id()).startsWith("call_");
            assertThat(call.function().name()).isEqualTo("get_weather");
            assertThat(weather.validate(call.function().arguments(), InputFormat.JSON)).isEmpty();
        }
    }

    @Test
    void forcedToolCallFitsFortyEightTokensCountedInRealTokens() {
        // the completion budget counts the model's tokens (the call is a few dozen), not single bytes
        for (long seed = 1; seed <= 3; seed++) {
            ChatCompletion c = sdk.chat().completions().create(weatherRequest(seed).maxCompletionTokens(48).build());
            ChatCompletion.Choice choice = c.choices().getFirst();
            assertThat(choice.finishReason()).isEqualTo(ChatCompletion.Choice.FinishReason.TOOL_CALLS);
            ChatCompletionMessageFunctionToolCall call = choice.message().toolCalls().orElseThrow().getFirst()
                    .asFunction();
            assertThat(schema(WEATHER_SCHEMA).validate(call.function().arguments(), InputFormat.JSON)).isEmpty();
            assertThat(c.usage().orElseThrow().completionTokens()).isLessThanOrEqualTo(48);
        }
    }

    @Test
    void streamedNamedToolCallArrivesAsDeltasWithoutMarkupInContent() {
        StringBuilder content = new StringBuilder();
        StringBuilder args = new StringBuilder();
        List<String> names = new ArrayList<>();
        List<String> ids = new ArrayList<>();
        List<String> reasons = new ArrayList<>();
        List<String> fragments = new ArrayList<>();
        try (StreamResponse<ChatCompletionChunk> s = sdk.chat().completions()
                .createStreaming(weatherRequest(11).build())) {
            s.stream().forEach(chunk -> chunk.choices().forEach(ch -> {
                ch.delta().content().ifPresent(content::append);
                ch.delta().toolCalls().ifPresent(tcs -> tcs.forEach(tc -> {
                    assertThat(tc.index()).isZero();
                    tc.id().ifPresent(ids::add);
                    tc.function().flatMap(f -> f.name()).ifPresent(names::add);
                    tc.function().flatMap(f -> f.arguments()).ifPresent(args::append);
                    tc.function().flatMap(f -> f.arguments()).filter(a -> !a.isEmpty()).ifPresent(fragments::add);
                }));
                ch.finishReason().ifPresent(r -> reasons.add(r.asString()));
            }));
        }
        assertThat(content.toString()).doesNotContain("<tool_call>").isBlank();
        assertThat(names).containsExactly("get_weather");
        assertThat(ids).hasSize(1).allMatch(id -> id.startsWith("call_"));
        assertThat(schema(WEATHER_SCHEMA).validate(args.toString(), InputFormat.JSON)).isEmpty();
        assertThat(fragments).as("the arguments stream as they are generated").hasSizeGreaterThan(1);
        assertThat(reasons).containsExactly("tool_calls");
    }

    @Test
    void roundTripToolCallThenToolResultThenAnswer() {
        ChatCompletion first = sdk.chat().completions().create(weatherRequest(5).build());
        ChatCompletionMessageFunctionToolCall call = first.choices().getFirst().message().toolCalls().orElseThrow()
                .getFirst().asFunction();
        ChatCompletionCreateParams second = ChatCompletionCreateParams.builder().model(OpenAiSdkTest.MODEL)
                .addUserMessage("What is the weather in Paris?").addTool(weatherTool())
                .addMessage(ChatCompletionAssistantMessageParam.builder()
                        .addToolCall(ChatCompletionMessageToolCall.ofFunction(call)).build())
                .addMessage(ChatCompletionToolMessageParam.builder().toolCallId(call.id())
                        .content("sunny, 21 degrees").build())
                .toolChoice(ChatCompletionToolChoiceOption.Auto.NONE)
                .maxCompletionTokens(12).temperature(0.0).build();
        ChatCompletion answer = sdk.chat().completions().create(second);
        ChatCompletion.Choice choice = answer.choices().getFirst();
        assertThat(choice.message().toolCalls().orElse(List.of())).isEmpty();
        assertThat(choice.message().content()).hasValueSatisfying(t -> assertThat(t).isNotBlank());
        // the call and its result were rendered into the prompt
        assertThat(answer.usage().orElseThrow().promptTokens())
                .isGreaterThan(first.usage().orElseThrow().promptTokens() + 20);
    }

    @Test
    void hundredSeededJsonSchemaCompletionsAtTemperatureOneAllValidate() throws Exception {
        Schema movie = schema(MOVIE_REF_SCHEMA);
        @SuppressWarnings("unchecked")
        Map<String, Object> schemaMap = JSON.readValue(MOVIE_REF_SCHEMA, Map.class);
        ResponseFormatJsonSchema.JsonSchema.Schema.Builder sb = ResponseFormatJsonSchema.JsonSchema.Schema.builder();
        schemaMap.forEach((k, v) -> sb.putAdditionalProperty(k, JsonValue.from(v)));
        ResponseFormatJsonSchema format = ResponseFormatJsonSchema.builder().jsonSchema(ResponseFormatJsonSchema
                .JsonSchema.builder().name("movie").strict(true).schema(sb.build()).build()).build();
        List<CompletableFuture<ChatCompletion>> all = new ArrayList<>();
        for (int seed = 0; seed < 100; seed++) {
            ChatCompletionCreateParams p = ChatCompletionCreateParams.builder().model(OpenAiSdkTest.MODEL)
                    .addUserMessage("Describe a movie as JSON.").responseFormat(format)
                    .maxCompletionTokens(100 + seed % 3 * 10).temperature(1.0).seed(seed)
                    .putAdditionalBodyProperty("tqserve_lane", JsonValue.from("batched"))
                    .build();
            all.add(sdk.async().chat().completions().create(p));
        }
        for (CompletableFuture<ChatCompletion> f : all) {
            ChatCompletion c = f.get();
            String text = c.choices().getFirst().message().content().orElseThrow();
            assertThat(movie.validate(text, InputFormat.JSON)).as(text).isEmpty();
        }
    }

    static String chatBody(String extra) {
        return chatBody(4, extra);
    }

    static String chatBody(int maxTokens, String extra) {
        return "{\"model\":\"tiny-llama-h128\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                + "\"max_tokens\":" + maxTokens + ",\"temperature\":0" + extra + "}";
    }

    @Test
    void unsupportedSchemaKeywordIsA400NamingIt() throws Exception {
        var r = post("/v1/chat/completions", chatBody(",\"response_format\":{\"type\":\"json_schema\","
                + "\"json_schema\":{\"name\":\"x\",\"schema\":{\"type\":\"object\",\"properties\":"
                + "{\"code\":{\"type\":\"integer\",\"divisibleBy\":3}}}}}"));
        assertThat(r.statusCode()).isEqualTo(400);
        JsonNode e = JSON.readTree(r.body()).get("error");
        assertThat(e.get("param").asString()).isEqualTo("response_format");
        assertThat(e.get("code").asString()).isEqualTo("unsupported_schema");
        assertThat(e.get("message").asString()).contains("'divisibleBy'").contains("#/properties/code");
        var tool = post("/v1/chat/completions", chatBody(60, ",\"tools\":[{\"type\":\"function\",\"function\":"
                + "{\"name\":\"f\",\"parameters\":{\"type\":\"object\",\"dependentSchemas\":{\"a\":{}}}}}],"
                + "\"tool_choice\":\"required\""));
        assertThat(tool.statusCode()).isEqualTo(400);
        assertThat(JSON.readTree(tool.body()).get("error").get("message").asString()).contains("'dependentSchemas' (at #)");
    }

    @Test
    void unimplementedOutputChangingFieldsAreA400NamingThem() throws Exception {
        for (String[] c : new String[][] {{",\"n\":2", "n"}, {",\"audio\":{\"voice\":\"alloy\"}", "audio"},
                {",\"modalities\":[\"text\",\"audio\"]", "modalities"},
                {",\"prediction\":{\"type\":\"content\",\"content\":\"x\"}", "prediction"},
                {",\"web_search_options\":{}", "web_search_options"}, {",\"reasoning_effort\":\"extreme\"",
                    "reasoning_effort"}, {",\"chat_template_kwargs\":{\"tools\":[]}", "chat_template_kwargs"}}) {
            var r = post("/v1/chat/completions", chatBody(c[0]));
            assertThat(r.statusCode()).as(c[1]).isEqualTo(400);
            JsonNode e = JSON.readTree(r.body()).get("error");
            assertThat(e.get("param").asString()).isEqualTo(c[1]);
            assertThat(e.get("message").asString()).contains(c[1]);
        }
    }

    @Test
    void harmlessFieldsAreAccepted() throws Exception {
        var r = post("/v1/chat/completions", chatBody(",\"store\":true,\"metadata\":{\"k\":\"v\"},"
                + "\"service_tier\":\"auto\",\"user\":\"u1\",\"safety_identifier\":\"s\","
                + "\"prompt_cache_key\":\"p\",\"modalities\":[\"text\"],\"parallel_tool_calls\":false,"
                + "\"some_vendor_field\":{\"x\":1}"));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(JSON.readTree(r.body()).get("choices").get(0).get("message").get("content").isString()).isTrue();
    }

    @Test
    void jsonObjectModeGivesAnObject() throws Exception {
        var r = post("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                + "\"max_tokens\":40,\"temperature\":1,\"seed\":3,\"response_format\":{\"type\":\"json_object\"}}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        String content = JSON.readTree(r.body()).get("choices").get(0).get("message").get("content").asString();
        assertThat(JSON.readTree(content).isObject()).as(content).isTrue();
    }
}
