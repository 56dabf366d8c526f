package io.tqserve.backend;

import java.nio.file.Path;
import java.util.List;

/**
 * What a device-resident decoder needs to run a Llama-family model (Llama, Mistral, Qwen2, Qwen3) with Hugging
 * Face tensor names. Plain numbers and paths, so backends need nothing of the model package.
 *
 * @param dim            hidden size
 * @param hiddenDim      MLP intermediate size
 * @param numLayers      decoder layers
 * @param numHeads       query heads
 * @param numKvHeads     key/value heads
 * @param headDim        dimension of one head
 * @param vocabSize      vocabulary size
 * @param maxPositions   context length
 * @param rmsNormEps     RMSNorm epsilon
 * @param ropeInverseFrequencies (headDim/2) RoPE inverse frequencies, scaling already applied
 * @param qkvBias        q/k/v projections carry biases (Qwen2)
 * @param qkNorm         per-head RMSNorm of q and k before RoPE (Qwen3)
 * @param tiedEmbeddings the LM head is the embedding matrix
 * @param weightFiles    the safetensors files holding the tensors
 * @param javaMatrices   the Java forward's matrices by tensor name (Hugging Face names), so that a backend
 *                       serving the Java forward's matmuls can use the arrays it loaded instead of a second copy
 */
public record DecoderSpec(int dim, int hiddenDim, int numLayers, int numHeads, int numKvHeads, int headDim,
        int vocabSize, int maxPositions, float rmsNormEps, float[] ropeInverseFrequencies, boolean qkvBias,
        boolean qkNorm, boolean tiedEmbeddings, List<Path> weightFiles, java.util.Map<String, Matrix> javaMatrices) {

    public DecoderSpec {
        if (ropeInverseFrequencies.length != headDim / 2) {
            throw new IllegalArgumentException("need headDim/2 = " + headDim / 2 + " RoPE frequencies, got "
                    + ropeInverseFrequencies.length);
        }
        weightFiles = List.copyOf(weightFiles);
        javaMatrices = java.util.Map.copyOf(javaMatrices);
    }

    public int qDim() {
        return numHeads * headDim;
    }

    public int kvDim() {
        return numKvHeads * headDim;
    }
}
