package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.config.TqserveApplication;
import io.tqserve.toolcall.ToolCallFormat;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * A template in the layout of Mistral's tokenizer v11 ({@code [TOOL_CALLS]name[ARGS]{...}} per call, both markers
 * special tokens; goldens/toolcalls/sources/mistral_v11_args.jinja) over the embedded model whose tokenizer has
 * both markers as special tokens ({@link MarkerTokenModel}): auto and forced calls are constrained with the markers
 * written as tokens, every call is valid, arguments stream in fragments, several calls come back as
 * tool_calls[0..n].
 */
@SpringBootTest(classes = {TqserveApplication.class, LaneProbe.class},
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"tqserve.lanes.turbo.enabled=false"})
class MistralArgsToolsServingTest extends ServingClient {
    @DynamicPropertySource
    static void model(DynamicPropertyRegistry registry) throws Exception {
        var dir = MarkerTokenModel.create(Files.readString(Path.of("goldens/toolcalls/sources/mistral_v11_args.jinja")),
                Map.of(MarkerTokenModel.TOOL_CALLS, Map.entry("[TOOL_CALLS]", true),
                        MarkerTokenModel.ARGS, Map.entry("[ARGS]", true)));
        registry.add("tqserve.model.path", dir::toString);
    }

    static void autoCalls(ServingClient t) throws Exception {
        int withCalls = ChatFormatServingTest.autoNeverYieldsAnInvalidCall(t, "[TOOL_CALLS]",
                ",\"logit_bias\":{\"" + MarkerTokenModel.TOOL_CALLS + "\":" + ChatFormatServingTest.AUTO_BIAS + "}");
        assertThat(withCalls).isGreaterThanOrEqualTo(20);
    }

    static void forcedCallStreams(ServingClient t) throws Exception {
        String choice = "{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}}";
        var streamed = ChatFormatServingTest.post(t, "/v1/chat/completions", ChatFormatServingTest.toolRequest(
                ChatFormatServingTest.WEATHER, choice, 11, true, ""));
        assertThat(streamed.statusCode()).isEqualTo(200);
        ToolStream s = ToolStream.of(streamed.body());
        assertThat(s.calls()).hasSize(1);
        assertThat(s.calls().getFirst().get(1)).isEqualTo("get_weather");
        assertThat(s.fragments().getFirst()).isGreaterThan(1);
        ChatFormatServingTest.assertValid("get_weather", s.calls().getFirst().get(2));
        assertThat(s.content()).isEmpty();
        assertThat(s.finishReason()).isEqualTo("tool_calls");
    }

    @Test
    void theTemplateIsReadAsMistralNameArgsWithItsMarkersTokens() {
        var format = ChatFormats.of(runtime.loaded().orElseThrow().model());
        assertThat(format.tools()).contains(ToolCallFormat.MISTRAL_ARGS);
        assertThat(format.markerTokens()).isTrue();
    }

    @Test
    void autoCallsInManyOf100RunsAndEveryCallIsValid() throws Exception {
        autoCalls(this);
    }

    @Test
    void aForcedCallStreamsItsArgumentsInFragments() throws Exception {
        forcedCallStreams(this);
    }

    @Test
    void twoCallsInOneTurnComeBackAsToolCalls0And1() throws Exception {
        ChatFormatServingTest.twoCallsInOneTurn(this, ",\"logit_bias\":{\"0\":-100,\"2\":-100}");
    }
}
