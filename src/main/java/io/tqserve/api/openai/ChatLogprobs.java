package io.tqserve.api.openai;

import java.util.List;

/** Chat logprobs: one entry per generated token; refusal always null. */
public record ChatLogprobs(List<TokenLogprob> content, List<TokenLogprob> refusal) {

    /** A token, its log-probability, its UTF-8 bytes and the most likely alternatives. */
    public record TokenLogprob(String token, double logprob, List<Integer> bytes, List<TopLogprob> topLogprobs) {
    }

    public record TopLogprob(String token, double logprob, List<Integer> bytes) {
    }
}
