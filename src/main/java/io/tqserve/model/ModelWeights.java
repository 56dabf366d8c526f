package io.tqserve.model;

import io.tqserve.backend.Matrix;
import java.util.ArrayList;
import java.util.List;

/**
 * The weights of a Llama-family decoder, as views into memory-mapped safetensors. Small vectors (norms, biases)
 * are copied to float arrays; matrices stay off-heap.
 *
 * @param embedding  (vocabSize, dim)
 * @param layers     per-layer weights
 * @param finalNorm  (dim)
 * @param lmHead     (vocabSize, dim) — the embedding itself when tied
 */
public record ModelWeights(Matrix embedding, List<Layer> layers, float[] finalNorm, Matrix lmHead) {

    /**
     * One transformer layer.
     *
     * @param attnNorm (dim)
     * @param wq       (qDim, dim)
     * @param wk       (kvDim, dim)
     * @param wv       (kvDim, dim)
     * @param wo       (dim, qDim)
     * @param bq       (qDim) or null
     * @param bk       (kvDim) or null
     * @param bv       (kvDim) or null
     * @param qNorm    (headDim) or null (Qwen3)
     * @param kNorm    (headDim) or null (Qwen3)
     * @param mlpNorm  (dim)
     * @param wGate    (hiddenDim, dim)
     * @param wUp      (hiddenDim, dim)
     * @param wDown    (dim, hiddenDim)
     */
    public record Layer(float[] attnNorm, Matrix wq, Matrix wk, Matrix wv, Matrix wo, float[] bq, float[] bk,
            float[] bv, float[] qNorm, float[] kNorm, float[] mlpNorm, Matrix wGate, Matrix wUp, Matrix wDown) {
    }

    public static ModelWeights load(Safetensors st, ModelConfig c) {
        return load(st, c, QuantizationConfig.NONE);
    }

    /** Loads weights that may be group-affine quantized as {@code quant} (MLX's format, see {@link QuantizedWeights}). */
    public static ModelWeights load(Safetensors st, ModelConfig c, QuantizationConfig quant) {
        QuantizedWeights qw = new QuantizedWeights(st, quant);
        Matrix embedding = qw.matrix("model.embed_tokens.weight", c.vocabSize(), c.dim());
        List<Layer> layers = new ArrayList<>();
        for (int l = 0; l < c.numLayers(); l++) {
            String p = "model.layers." + l + ".";
            boolean bias = st.has(p + "self_attn.q_proj.bias");
            if (c.architecture().qkvBias() && !bias) {
                throw new IllegalArgumentException(c.architecture().hfName() + " weights lack " + p + "self_attn.q_proj.bias");
            }
            boolean qkNorm = st.has(p + "self_attn.q_norm.weight");
            if (c.architecture().qkNorm() && !qkNorm) {
                throw new IllegalArgumentException(c.architecture().hfName() + " weights lack " + p + "self_attn.q_norm.weight");
            }
            layers.add(new Layer(
                    vector(st, p + "input_layernorm.weight", c.dim()),
                    qw.matrix(p + "self_attn.q_proj.weight", c.qDim(), c.dim()),
                    qw.matrix(p + "self_attn.k_proj.weight", c.kvDim(), c.dim()),
                    qw.matrix(p + "self_attn.v_proj.weight", c.kvDim(), c.dim()),
                    qw.matrix(p + "self_attn.o_proj.weight", c.dim(), c.qDim()),
                    bias ? vector(st, p + "self_attn.q_proj.bias", c.qDim()) : null,
                    bias ? vector(st, p + "self_attn.k_proj.bias", c.kvDim()) : null,
                    bias ? vector(st, p + "self_attn.v_proj.bias", c.kvDim()) : null,
                    qkNorm ? vector(st, p + "self_attn.q_norm.weight", c.headDim()) : null,
                    qkNorm ? vector(st, p + "self_attn.k_norm.weight", c.headDim()) : null,
                    vector(st, p + "post_attention_layernorm.weight", c.dim()),
                    qw.matrix(p + "mlp.gate_proj.weight", c.hiddenDim(), c.dim()),
                    qw.matrix(p + "mlp.up_proj.weight", c.hiddenDim(), c.dim()),
                    qw.matrix(p + "mlp.down_proj.weight", c.dim(), c.hiddenDim())));
        }
        float[] finalNorm = vector(st, "model.norm.weight", c.dim());
        Matrix lmHead = st.has("lm_head.weight") && !c.tieEmbeddings()
                ? qw.matrix("lm_head.weight", c.vocabSize(), c.dim())
                : embedding;
        if (!c.tieEmbeddings() && !st.has("lm_head.weight")) {
            // Some exports omit lm_head even when the config says untied; the embedding is the only candidate.
            lmHead = embedding;
        }
        return new ModelWeights(embedding, List.copyOf(layers), finalNorm, lmHead);
    }

    static Matrix dense(Safetensors st, String name, int rows, int cols) {
        Safetensors.Tensor t = st.get(name);
        checkShape(t, rows, cols);
        return new Matrix(t.data(), t.dtype(), rows, cols);
    }

    static void checkShape(Safetensors.Tensor t, long rows, long cols) {
        if (t.shape().length != 2 || t.shape()[0] != rows || t.shape()[1] != cols) {
            throw new IllegalArgumentException("tensor " + t.name() + " has shape " + java.util.Arrays.toString(t.shape())
                    + ", expected [" + rows + ", " + cols + "]");
        }
    }

    private static float[] vector(Safetensors st, String name, int n) {
        Safetensors.Tensor t = st.get(name);
        if (t.elements() != n) {
            throw new IllegalArgumentException("tensor " + name + " has " + t.elements() + " elements, expected " + n);
        }
        return t.toFloats();
    }
}
