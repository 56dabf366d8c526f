package io.tqserve.backend.cpu;

import io.tqserve.backend.Matrix;
import java.util.Locale;

/**
 * What the CPU backend's 4- and 8-bit kernels multiply the codes by ({@code -Dtqserve.cpu.quant-activations}): the
 * activations as floats ({@link QuantizedVector}), or quantized per block of columns with integer dot products
 * ({@link QuantizedInt8}). Integer kernels need 256-bit vectors and groups of whole blocks; other matrices run the
 * float kernels whatever the setting. docs/quantization.md, "CPU kernels", gives the arithmetic and the measurements.
 */
public enum QuantActivations {
    /** Float activations for every width: products within float32 rounding of the dequantized weights'. */
    FLOAT,
    /**
     * The default: 4-bit weights multiply activations quantized to {@code |xq| <= 1092} per block of 64 columns
     * ({@link QuantizedWide4}: about 1.2x the float kernels per core on AMD Zen 3, the embedded model's greedy tokens
     * unchanged on its reference prompts), 8-bit weights float activations (no integer form here is faster at 8 bits
     * without changing greedy tokens).
     */
    AUTO,
    /** Int8 activations for 4- and 8-bit weights ({@link QuantizedInt8}): fastest at 4 bits, changes greedy tokens. */
    INT8;

    /** The system property that picks one: {@code auto} (default), {@code float} or {@code int8}. */
    public static final String PROPERTY = "tqserve.cpu.quant-activations";

    /** The value of {@link #PROPERTY}; anything else fails naming the property and the accepted values. */
    public static QuantActivations configured() {
        String v = System.getProperty(PROPERTY, "auto").trim();
        return switch (v.toLowerCase(Locale.ROOT)) {
            case "auto" -> AUTO;
            case "float" -> FLOAT;
            case "int8" -> INT8;
            default -> throw new IllegalArgumentException(
                    "-D" + PROPERTY + "=" + v + " is not one of auto, float, int8");
        };
    }

    /** Whether w (running the Vector API kernels) takes integer kernels under this setting. */
    boolean integer(Matrix w) {
        int bits = w.quant().bits();
        return switch (this) {
            case FLOAT -> false;
            case AUTO -> bits == 4 && QuantizedInt8.supported(bits, w.quant().groupSize());
            case INT8 -> QuantizedInt8.supported(bits, w.quant().groupSize());
        };
    }

    /** The largest |xq| of w's quantized activations: {@link QuantizedWide4#RANGE} at 4 bits under AUTO, else 127. */
    int range(Matrix w) {
        return this == AUTO && w.quant().bits() == 4 ? QuantizedWide4.RANGE : 127;
    }
}
