package io.tqserve.kv;

import java.util.Set;

/**
 * Exact bytes a token costs in a KV cache. One pure function feeds the allocator, the admission check and the
 * {@code tqserve.kv.bytes.per.token} gauge; a golden test pins it to the reference table.
 *
 * @param scheme     the KV scheme
 * @param layers     transformer layers holding a KV cache
 * @param numKvHeads KV heads per layer
 * @param headDim    head dimension
 */
public record KvLayout(KvScheme scheme, int layers, int numKvHeads, int headDim) {

    /** Head dims the TurboQuant codec serves (its sign vectors exist for these only). */
    public static final Set<Integer> TURBO_HEAD_DIMS = Set.of(64, 128, 256, 512);

    /** TurboQuant group size along head_dim. */
    public static final int TURBO_GROUP = 32;

    public KvLayout {
        if (layers < 1 || numKvHeads < 1 || headDim < 1) {
            throw new IllegalArgumentException("layers, numKvHeads and headDim must be positive");
        }
        checkServable(scheme, headDim);
    }

    public static KvLayout of(KvScheme scheme, int layers, int numKvHeads, int headDim) {
        return new KvLayout(scheme, layers, numKvHeads, headDim);
    }

    /** Throws with a message naming the supported head dims when {@code scheme} cannot serve {@code headDim}. */
    public static void checkServable(KvScheme scheme, int headDim) {
        switch (scheme) {
            case KvScheme.Turbo t -> {
                if (!TURBO_HEAD_DIMS.contains(headDim)) {
                    throw new IllegalArgumentException("head_dim " + headDim + " is not supported by the turbo KV scheme "
                            + t.id() + " (needs 64, 128, 256 or 512)");
                }
            }
            case KvScheme.Uniform u -> {
                if (headDim % KvScheme.Uniform.GROUP != 0 || headDim * u.bits() % 8 != 0) {
                    throw new IllegalArgumentException("head_dim " + headDim + " is not supported by the " + u.id()
                            + " KV scheme (needs a multiple of " + KvScheme.Uniform.GROUP + ")");
                }
            }
            case KvScheme.Bf16 b -> {
            }
        }
    }

    /** Bytes one token costs for one KV head of one layer, K and V together. */
    public static int bytesPerTokenPerHead(KvScheme scheme, int headDim) {
        checkServable(scheme, headDim);
        return switch (scheme) {
            case KvScheme.Bf16 b -> 2 * 2 * headDim;
            case KvScheme.Turbo t -> keyCodeBytes(t.kBits(), headDim) + 2 * 2 * (headDim / TURBO_GROUP)
                    + valueCodeBytes(t.vBits(), headDim) + 2 * (headDim / TURBO_GROUP);
            case KvScheme.Uniform u -> 2 * (headDim * u.bits() / 8 + 2 * 2 * (headDim / KvScheme.Uniform.GROUP));
        };
    }

    /** Bytes of the packed key codes of one head: head_dim·kBits/8. */
    public static int keyCodeBytes(int kBits, int headDim) {
        return headDim * kBits / 8;
    }

    /** Bytes of the packed value codes of one head: head_dim·vBits/8. */
    public static int valueCodeBytes(int vBits, int headDim) {
        return headDim * vBits / 8;
    }

    /** Bytes one token costs for one KV head of one layer. */
    public int bytesPerTokenPerHead() {
        return bytesPerTokenPerHead(scheme, headDim);
    }

    /** Bytes one token costs across all layers and KV heads. */
    public long bytesPerToken() {
        return (long) bytesPerTokenPerHead() * layers * numKvHeads;
    }

    /** Bytes {@code tokens} tokens cost across all layers and KV heads. */
    public long bytesFor(long tokens) {
        return bytesPerToken() * tokens;
    }

    /** bf16 bytes per token divided by this layout's: 2.56 for turbo k8v3. */
    public double compressionRatio() {
        return (double) bytesPerTokenPerHead(KvScheme.BF16, headDim) / bytesPerTokenPerHead();
    }

    /** Stored bits per K or V element, including scales: 16 for bf16, 6.25 for turbo k8v3. */
    public double effectiveBits() {
        return bytesPerTokenPerHead() * 8.0 / (2.0 * headDim);
    }
}
