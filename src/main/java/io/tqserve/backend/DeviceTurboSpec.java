package io.tqserve.backend;

/**
 * What a backend needs to hold a TurboQuant KV cache on its device ({@link ComputeBackend#newDeviceTurboKv}): the
 * attention shape, the key and value quantizers and the codec's constants (the kv package owns them; the backend
 * SPI does not depend on it). Entries follow {@code docs/kv-format.md}: per token and KV head, K codes, K scales, K
 * zeros, V codes, V scales, {@link #entryBytes()} in all.
 *
 * @param quantizedKvStart the first this-many tokens stay bf16 (0: every token is quantized)
 * @param kSigned          8-bit keys stored as two's complement (q8_0), else unsigned codes
 * @param signs            the head_dim's ±1 sign vector of the value rotation
 * @param centroids        the 2^vBits value codebook, ascending
 * @param boundaries       the codebook's 2^vBits − 1 decision boundaries
 */
public record DeviceTurboSpec(int layers, int numHeads, int numKvHeads, int headDim, int maxTokens,
        int quantizedKvStart, int kBits, boolean kSigned, int vBits, float[] signs, float[] centroids,
        float[] boundaries) {
    /** Elements per scale group along head_dim. */
    public static final int GROUP = 32;

    public DeviceTurboSpec {
        if (headDim % GROUP != 0 || numHeads % numKvHeads != 0 || quantizedKvStart < 0) {
            throw new IllegalArgumentException("bad TurboQuant device cache shape: head_dim " + headDim + ", "
                    + numHeads + " heads over " + numKvHeads + " KV heads, quantizedKvStart " + quantizedKvStart);
        }
    }

    /** Scale groups per head. */
    public int groups() {
        return headDim / GROUP;
    }

    public int keyCodeBytes() {
        return headDim * kBits / 8;
    }

    public int valueCodeBytes() {
        return headDim * vBits / 8;
    }

    /** Bytes of one entry (one token, one KV head): headDim·(kBits+vBits)/8 + 6·headDim/32. */
    public int entryBytes() {
        return keyCodeBytes() + valueCodeBytes() + 6 * groups();
    }
}
