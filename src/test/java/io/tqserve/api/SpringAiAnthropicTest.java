package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import com.anthropic.models.messages.ToolChoice;
import com.anthropic.models.messages.ToolChoiceNone;
import com.anthropic.models.messages.ToolChoiceTool;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.ai.anthropic.AnthropicChatModel;
import org.springframework.ai.anthropic.AnthropicChatOptions;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.client.ChatClientRequest;
import org.springframework.ai.chat.client.ChatClientResponse;
import org.springframework.ai.chat.client.advisor.api.CallAdvisor;
import org.springframework.ai.chat.client.advisor.api.CallAdvisorChain;
import org.springframework.ai.chat.messages.ToolResponseMessage;
import org.springframework.ai.tool.annotation.Tool;
import org.springframework.ai.tool.annotation.ToolParam;

/**
 * Spring AI 2.x's Anthropic chat model (built on the Anthropic Java SDK) pointed at {@code /v1/messages}: a
 * {@code @Tool} method is called with the embedded model's tool_use input and its result goes back as a
 * tool_result that the model answers. (Spring AI's Anthropic HTTP client takes no interceptor, so the wire is
 * checked by AnthropicSdkTest and MessagesSseTest; this test holds the framework's tool loop.)
 */
class SpringAiAnthropicTest extends ServingTestContext {
    ChatClient chat;

    @BeforeEach
    void chatClient() {
        AnthropicChatModel model = AnthropicChatModel.builder()
                .options(AnthropicChatOptions.builder().baseUrl(baseUrl()).apiKey("unused").maxRetries(0)
                        .model(OpenAiSdkTest.MODEL).temperature(0.0).maxTokens(90).build())
                .build();
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

    /** As in SpringAiChatClientTest: a forced call is relaxed to none once a tool result is in the conversation. */
    static final CallAdvisor ANSWER_AFTER_TOOL_RESULT = new CallAdvisor() {
        @Override
        public ChatClientResponse adviseCall(ChatClientRequest request, CallAdvisorChain chain) {
            boolean hasResult = request.prompt().getInstructions().stream()
                    .anyMatch(m -> m instanceof ToolResponseMessage);
            if (hasResult && request.prompt().getOptions() instanceof AnthropicChatOptions o) {
                request = request.mutate().prompt(request.prompt().mutate().chatOptions(o.mutate()
                        .toolChoice(ToolChoice.ofNone(ToolChoiceNone.builder().build())).build()).build()).build();
            }
            return chain.nextCall(request);
        }

        @Override
        public String getName() {
            return "answer after tool result";
        }

        @Override
        public int getOrder() {
            return 0;
        }
    };

    @Test
    void toolAnnotatedMethodIsCalledAndItsResultGoesBackToTheModel() {
        WeatherTools tools = new WeatherTools();
        String answer = chat.prompt().user("What is the weather in Paris?").tools(tools)
                .advisors(ANSWER_AFTER_TOOL_RESULT)
                .options(AnthropicChatOptions.builder().toolChoice(ToolChoice.ofTool(ToolChoiceTool.builder()
                        .name("get_weather").disableParallelToolUse(true).build())))
                .call().content();

        // Spring AI parsed the tool_use block and ran the @Tool method once with the model's (constrained) input
        assertThat(tools.asked).hasSize(1);
        assertThat(tools.asked.getFirst()).isNotBlank().hasSizeLessThanOrEqualTo(20);
        // then the tool_result went back and the model's text answer is what ChatClient returns
        assertThat(answer).isNotBlank();
    }
}
