package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import dev.langchain4j.agent.tool.P;
import dev.langchain4j.agent.tool.Tool;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.model.chat.listener.ChatModelListener;
import dev.langchain4j.model.chat.listener.ChatModelRequestContext;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.request.ToolChoice;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.model.openai.OpenAiStreamingChatModel;
import dev.langchain4j.service.AiServices;
import dev.langchain4j.service.TokenStream;
import dev.langchain4j.service.tool.ToolExecution;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * LangChain4j's {@code AiServices} with a {@code @Tool} method over its OpenAI <em>streaming</em> chat model
 * ({@code TokenStream}) against the test server: the streamed call (header, then argument fragments) is assembled by
 * LangChain4j, the tool runs with the model's argument, its result goes back to the model, and the streamed answer
 * after it is what the TokenStream completes with.
 */
class LangChain4jStreamingToolsTest extends ServingTestContext {

    interface Assistant {
        TokenStream chat(String message);
    }

    static class WeatherTools {
        final List<String> asked = new CopyOnWriteArrayList<>();

        @Tool(name = "get_weather", value = "Current weather in a city")
        String weather(@P("the city") String city) {
            asked.add(city);
            return "{\"city\": \"" + city.replace("\"", "") + "\", \"celsius\": 21, \"sky\": \"sunny\"}";
        }
    }

    /**
     * The embedded model calls a tool only when forced: this wrapper sends {@code tool_choice: required} until a
     * tool result is in the conversation, then {@code none} (a forced call every round would loop).
     */
    record FirstCallForced(StreamingChatModel delegate) implements StreamingChatModel {
        @Override
        public void chat(ChatRequest request, StreamingChatResponseHandler handler) {
            boolean hasResult = request.messages().stream().anyMatch(m -> m instanceof ToolExecutionResultMessage);
            ChatRequestParameters choice = ChatRequestParameters.builder()
                    .toolChoice(hasResult ? ToolChoice.NONE : ToolChoice.REQUIRED).build();
            delegate.chat(ChatRequest.builder().messages(request.messages())
                    .parameters(request.parameters().overrideWith(choice)).build(), handler);
        }

        @Override
        public ChatRequestParameters defaultRequestParameters() {
            return delegate.defaultRequestParameters();
        }
    }

    @Test
    void aToolRunsOverAStreamingModelAndItsResultIsUsed() throws Exception {
        List<ChatRequest> sent = new CopyOnWriteArrayList<>();
        ChatModelListener recorder = new ChatModelListener() {
            @Override
            public void onRequest(ChatModelRequestContext context) {
                sent.add(context.chatRequest());
            }
        };
        StreamingChatModel model = OpenAiStreamingChatModel.builder().baseUrl(baseUrl() + "/v1").apiKey("unused")
                .modelName(OpenAiSdkTest.MODEL).temperature(0.0).seed(7).maxCompletionTokens(90)
                .parallelToolCalls(false).listeners(List.of(recorder)).build();
        WeatherTools tools = new WeatherTools();
        Assistant assistant = AiServices.builder(Assistant.class).streamingChatModel(new FirstCallForced(model))
                .tools(tools).build();

        StringBuilder streamed = new StringBuilder();
        List<ToolExecution> executed = new CopyOnWriteArrayList<>();
        CompletableFuture<ChatResponse> done = new CompletableFuture<>();
        assistant.chat("What is the weather in Paris?").onPartialResponse(streamed::append)
                .onToolExecuted(executed::add).onCompleteResponse(done::complete)
                .onError(done::completeExceptionally).start();
        ChatResponse answer = done.get(180, TimeUnit.SECONDS);

        // the tool ran once, with the argument the model streamed
        assertThat(tools.asked).hasSize(1);
        assertThat(executed).hasSize(1);
        assertThat(executed.getFirst().request().name()).isEqualTo("get_weather");
        assertThat(ToolsSdkTest.JSON.readTree(executed.getFirst().request().arguments()).get("city").asString())
                .isEqualTo(tools.asked.getFirst());
        // its result went back to the model in the second request
        assertThat(sent).hasSize(2);
        ToolExecutionResultMessage result = (ToolExecutionResultMessage) sent.get(1).messages().getLast();
        assertThat(result.text()).contains("sunny");
        assertThat(result.id()).isEqualTo(executed.getFirst().request().id());
        // and the answer after it is what the stream carried
        assertThat(answer.aiMessage().hasToolExecutionRequests()).isFalse();
        assertThat(answer.aiMessage().text()).isNotBlank().isEqualTo(streamed.toString());
    }
}
