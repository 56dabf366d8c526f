package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.config.TqserveApplication;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@code tool_choice: auto} with the Hermes format, made to call: the embedded model's template with
 * {@code <tool_call>} as one (ordinary) token, as Qwen2.5's tokenizer has it, raised with {@code logit_bias}, so
 * that a good share of 100 seeded runs call; every call is valid against its tool's schema.
 */
@SpringBootTest(classes = {TqserveApplication.class, LaneProbe.class},
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"tqserve.lanes.turbo.enabled=false"})
class HermesMarkerTokenServingTest extends ServingClient {
    @DynamicPropertySource
    static void model(DynamicPropertyRegistry registry) throws Exception {
        var dir = MarkerTokenModel.create(null, Map.of(MarkerTokenModel.HERMES_CALL, Map.entry("<tool_call>", false)));
        registry.add("tqserve.model.path", dir::toString);
    }

    @Test
    void theMarkerIsOneToken() {
        assertThat(runtime.loaded().orElseThrow().model().tokenizer().encode("<tool_call>"))
                .containsExactly(MarkerTokenModel.HERMES_CALL);
    }

    @Test
    void autoCallsInManyOf100RunsAndEveryCallIsValid() throws Exception {
        int withCalls = ChatFormatServingTest.autoNeverYieldsAnInvalidCall(this, "<tool_call>",
                ",\"logit_bias\":{\"" + MarkerTokenModel.HERMES_CALL + "\":" + ChatFormatServingTest.AUTO_BIAS + "}");
        assertThat(withCalls).isGreaterThanOrEqualTo(20);
    }
}
