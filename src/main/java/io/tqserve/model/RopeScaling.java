package io.tqserve.model;

/**
 * RoPE frequency scaling from {@code rope_scaling} / {@code rope_parameters}.
 *
 * @param type                    "default", "linear" or "llama3"
 * @param factor                  scaling factor (linear, llama3)
 * @param lowFreqFactor           llama3 low_freq_factor
 * @param highFreqFactor          llama3 high_freq_factor
 * @param originalMaxPositions    llama3 original_max_position_embeddings
 */
public record RopeScaling(String type, double factor, double lowFreqFactor, double highFreqFactor,
        int originalMaxPositions) {

    public static final RopeScaling NONE = new RopeScaling("default", 1, 1, 1, 0);

    /**
     * Inverse frequencies for a rotary dimension {@code rotaryDim}, computed as Hugging Face does in float32:
     * {@code 1 / theta^(2i/d)}, then adjusted by the scaling type.
     */
    public float[] inverseFrequencies(double theta, int rotaryDim) {
        int half = rotaryDim / 2;
        float[] inv = new float[half];
        for (int i = 0; i < half; i++) {
            float exponent = (float) (2 * i) / rotaryDim;
            float pow = (float) Math.pow((float) theta, exponent);
            inv[i] = 1.0f / pow;
        }
        switch (type) {
            case "default" -> {
            }
            case "linear" -> {
                for (int i = 0; i < half; i++) {
                    inv[i] = (float) (inv[i] / factor);
                }
            }
            case "llama3" -> {
                double lowWavelen = originalMaxPositions / lowFreqFactor;
                double highWavelen = originalMaxPositions / highFreqFactor;
                for (int i = 0; i < half; i++) {
                    float f = inv[i];
                    double wavelen = 2 * Math.PI / f;
                    float scaled = wavelen > lowWavelen ? (float) (f / factor) : f;
                    if (!(wavelen < highWavelen) && !(wavelen > lowWavelen)) {
                        double smooth = (originalMaxPositions / wavelen - lowFreqFactor) / (highFreqFactor - lowFreqFactor);
                        scaled = (float) ((1 - smooth) * scaled / factor + smooth * scaled);
                    }
                    inv[i] = scaled;
                }
            }
            default -> throw new IllegalArgumentException(
                    "unsupported rope scaling type '" + type + "' (supported: default, linear, llama3)");
        }
        return inv;
    }
}
