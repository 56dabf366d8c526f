package io.tqserve.kv;

/**
 * What a KV cache needs to know of the model.
 *
 * @param layers     layers with a KV cache
 * @param numHeads   query heads
 * @param numKvHeads KV heads (numHeads is a multiple)
 * @param headDim    head dimension
 */
public record AttentionShape(int layers, int numHeads, int numKvHeads, int headDim) {
    public AttentionShape {
        if (layers < 1 || numHeads < 1 || numKvHeads < 1 || headDim < 1 || numHeads % numKvHeads != 0) {
            throw new IllegalArgumentException("invalid attention shape " + layers + "/" + numHeads + "/"
                    + numKvHeads + "/" + headDim);
        }
    }

    public int kvDim() {
        return numKvHeads * headDim;
    }

    public int qDim() {
        return numHeads * headDim;
    }

    public int groupSize() {
        return numHeads / numKvHeads;
    }

    public KvLayout layout(KvScheme scheme) {
        return KvLayout.of(scheme, layers, numKvHeads, headDim);
    }
}
