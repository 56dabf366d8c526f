package io.tqserve.model.quantize;

/**
 * MLX's affine quantization of one row, step for step as {@code mlx/backend/cpu/quantized.cpp} {@code quantize}
 * computes it in float32 (so a model quantized here and one quantized by {@code mlx_lm.convert} hold the same codes
 * for the same weights). For each group of {@code groupSize} values with minimum {@code lo} and maximum {@code hi}:
 * <ol>
 * <li>{@code scale = max((hi - lo) / (2^bits - 1), 1e-7)}, negated unless {@code |lo| > |hi|};</li>
 * <li>{@code edge} is {@code lo} when {@code |lo| > |hi|}, else {@code hi}; {@code q0 = rint(edge / scale)};</li>
 * <li>when {@code q0 != 0}: {@code scale = edge / q0} and {@code bias = edge} (the edge is represented exactly);
 * otherwise {@code bias = 0};</li>
 * <li>each code is {@code clamp(rint((w - bias) / scale), 0, 2^bits - 1)} (round half to even), computed with the
 * float32 scale and bias; the stored scale and bias are then rounded to the model's dtype.</li>
 * </ol>
 * Codes are packed LSB first into one little-endian bit stream per row (see {@link io.tqserve.backend.GroupQuant}).
 */
public final class AffineQuantizer {
    private AffineQuantizer() {
    }

    /**
     * Quantizes w[off..off+cols) into packed[pOff..pOff+cols·bits/8) and the float32 scales/biases of its
     * cols/groupSize groups at sOff.
     */
    public static void quantizeRow(float[] w, int off, int cols, int bits, int groupSize, byte[] packed, int pOff,
            float[] scales, float[] biases, int sOff) {
        float nBins = (1 << bits) - 1;
        int[] codes = new int[groupSize];
        long acc = 0;
        int have = 0;
        int at = pOff;
        for (int g = 0; g < cols / groupSize; g++) {
            int base = off + g * groupSize;
            float lo = Float.POSITIVE_INFINITY;
            float hi = Float.NEGATIVE_INFINITY;
            for (int j = 0; j < groupSize; j++) {
                hi = Math.max(hi, w[base + j]);
                lo = Math.min(lo, w[base + j]);
            }
            boolean mask = Math.abs(lo) > Math.abs(hi);
            float scale = Math.max((hi - lo) / nBins, 1e-7f);
            scale = mask ? scale : -scale;
            float edge = mask ? lo : hi;
            float q0 = (float) Math.rint(edge / scale);
            float bias = 0;
            if (q0 != 0) {
                scale = edge / q0;
                bias = edge;
            }
            for (int j = 0; j < groupSize; j++) {
                float q = (float) Math.rint((w[base + j] - bias) / scale);
                codes[j] = (int) Math.min(Math.max(q, 0f), nBins);
            }
            for (int j = 0; j < groupSize; j++) {
                acc |= (long) codes[j] << have;
                have += bits;
                while (have >= 8) {
                    packed[at++] = (byte) acc;
                    acc >>>= 8;
                    have -= 8;
                }
            }
            scales[sOff + g] = scale;
            biases[sOff + g] = bias;
        }
    }

    /** float to bf16 bits, rounding to nearest even (as MLX's float-to-bfloat16 cast). */
    public static short toBf16(float v) {
        int bits = Float.floatToRawIntBits(v);
        if (Float.isNaN(v)) {
            return (short) ((bits >>> 16) | 0x40);
        }
        return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
    }
}
