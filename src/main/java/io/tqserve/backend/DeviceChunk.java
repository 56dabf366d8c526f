package io.tqserve.backend;

/**
 * New tokens of one sequence for a device forward pass.
 *
 * @param kv        the sequence's device cache; positions continue at {@code kv.length()}
 * @param tokens    token ids, the chunk is {@code tokens[from .. from+count)}
 * @param allLogits logits for every row instead of the last row only (not with a sampler)
 * @param sampler   when set, the next token is sampled on the device from the last row and only it (and the
 *                  logprobs the sampler was asked for) is copied to Java; its logits row is not written. A chunk
 *                  with a sampler is a decode step (one token: the sequence's previous output)
 * @param input     when set, the chunk's one token is this token of an earlier queued step (not yet read by Java)
 *                  instead of {@code tokens[from]}
 */
public record DeviceChunk(DeviceKv kv, int[] tokens, int from, int count, boolean allLogits, DeviceSampler sampler,
        DeviceToken input) {
    public DeviceChunk(DeviceKv kv, int[] tokens, int from, int count, boolean allLogits, DeviceSampler sampler) {
        this(kv, tokens, from, count, allLogits, sampler, null);
    }

    public DeviceChunk {
        if (input != null && count != 1) {
            throw new IllegalArgumentException("a chunk fed a device token is one token");
        }
        if (count < 1 || from < 0 || from + count > tokens.length) {
            throw new IllegalArgumentException("empty or out-of-range chunk");
        }
        if (sampler != null && (allLogits || count != 1)) {
            throw new IllegalArgumentException("a chunk sampled on the device is one decode token without allLogits");
        }
    }

    /** Logits rows this chunk owns in the output (written only without a sampler). */
    public int logitRows() {
        return allLogits ? count : 1;
    }
}
