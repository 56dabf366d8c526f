package io.tqserve.api.openai;

import java.util.List;
import java.util.Map;

/** Legacy completion logprobs: parallel lists over the generated tokens. */
public record CompletionLogprobs(List<String> tokens, List<Double> tokenLogprobs,
        List<Map<String, Double>> topLogprobs, List<Integer> textOffset) {
}
