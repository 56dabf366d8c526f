package io.tqserve.backend;

/**
 * A token sampled on the device and the logprobs that were asked for.
 *
 * @param token       the sampled token id
 * @param logprob     its log-probability under the model's raw logits (NaN when logprobs were not asked for)
 * @param topIds      the {@code topLogprobs} most likely token ids, most likely first (empty when not asked)
 * @param topLogprobs their log-probabilities
 */
public record DeviceSample(int token, float logprob, int[] topIds, float[] topLogprobs) {
}
