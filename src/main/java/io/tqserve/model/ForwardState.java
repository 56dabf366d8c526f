package io.tqserve.model;

/**
 * Activation buffers of one caller of {@link Transformer#forward} (each lane owns one). Grown on demand to the
 * largest batch seen, so steady-state decode allocates nothing.
 */
public final class ForwardState {
    final ModelConfig c;
    int capacityRows;
    float[] x;      // (N, dim) residual stream
    float[] xb;     // (N, dim) normed input of a sub-block
    float[] q;      // (N, qDim)
    float[] k;      // (N, kvDim)
    float[] v;      // (N, kvDim)
    float[] att;    // (N, qDim) attention output
    float[] tmp;    // (N, dim) projection output
    float[] gate;   // (N, hiddenDim)
    float[] up;     // (N, hiddenDim)
    float[] normed; // (L, dim) final-normed rows that need logits
    float[] logits; // (L, vocabSize)
    int logitRowsCapacity;
    io.tqserve.backend.DeviceSample[] samples = new io.tqserve.backend.DeviceSample[0]; // per chunk, device-sampled

    public ForwardState(ModelConfig c) {
        this.c = c;
    }

    void ensure(int rows, int logitRows) {
        if (rows > capacityRows) {
            capacityRows = rows;
            x = new float[rows * c.dim()];
            xb = new float[rows * c.dim()];
            q = new float[rows * c.qDim()];
            k = new float[rows * c.kvDim()];
            v = new float[rows * c.kvDim()];
            att = new float[rows * c.qDim()];
            tmp = new float[rows * c.dim()];
            gate = new float[rows * c.hiddenDim()];
            up = new float[rows * c.hiddenDim()];
        }
        if (logitRows > logitRowsCapacity) {
            logitRowsCapacity = logitRows;
            normed = new float[logitRows * c.dim()];
            logits = new float[logitRows * c.vocabSize()];
        }
    }

    void ensureSamples(int chunks) {
        if (samples.length < chunks) {
            samples = new io.tqserve.backend.DeviceSample[chunks];
        }
    }

    /**
     * The token the device sampled for chunk {@code i} of the last pass, or null when that chunk's logits are in
     * {@link #logits()} (no sampler, or the pass ran in Java).
     */
    public io.tqserve.backend.DeviceSample sample(int i) {
        return i < samples.length ? samples[i] : null;
    }

    /** Logits of the last forward pass: (logitRows, vocabSize), in chunk order. */
    public float[] logits() {
        return logits;
    }
}
