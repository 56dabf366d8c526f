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
 * The Mistral Small 3.1 template (goldens/toolcalls/sources) over the embedded model whose tokenizer has
 * {@code [TOOL_CALLS]} as a special token ({@link MarkerTokenModel}): {@code tool_choice: auto} is constrained,
 * free content or the {@code [TOOL_CALLS]} token followed by a valid call list, so the many runs that call (the
 * token raised with {@code logit_bias}) all give valid calls; forced calls start with the token and stream their
 * arguments in fragments; several calls come back as tool_calls[0..n].
 */
@SpringBootTest(classes = {TqserveApplication.class, LaneProbe.class},
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"tqserve.lanes.turbo.enabled=false"})
class MistralToolsServingTest extends ServingClient {
    @DynamicPropertySource
    static void model(DynamicPropertyRegistry registry) throws Exception {
        var dir = MarkerTokenModel.create(Files.readString(Path.of("goldens/toolcalls/sources/mistral_small_3_1.jinja")),
                Map.of(MarkerTokenModel.TOOL_CALLS, Map.entry("[TOOL_CALLS]", true)));
        registry.add("tqserve.model.path", dir::toString);
    }

    @Test
    void theTemplateIsReadAsMistralWithItsMarkerAToken() {
        var format = ChatFormats.of(runtime.loaded().orElseThrow().model());
        assertThat(format.tools()).contains(ToolCallFormat.MISTRAL);
        assertThat(format.markerTokens()).isTrue();
    }

    @Test
    void autoCallsInManyOf100RunsAndEveryCallIsValid() throws Exception {
        MistralArgsToolsServingTest.autoCalls(this);
    }

    @Test
    void aForcedCallStreamsItsArgumentsInFragments() throws Exception {
        MistralArgsToolsServingTest.forcedCallStreams(this);
    }

    @Test
    void twoCallsInOneTurnComeBackAsToolCalls0And1() throws Exception {
        // the embedded model closes the list after one call unless "]" is biased away (the constraint still closes
        // it within max_tokens)
        int close = runtime.loaded().orElseThrow().model().tokenizer().encode("]")[0];
        ChatFormatServingTest.twoCallsInOneTurn(this, ",\"logit_bias\":{\"0\":-100,\"2\":-100,\"" + close
                + "\":-100}");
    }
}
