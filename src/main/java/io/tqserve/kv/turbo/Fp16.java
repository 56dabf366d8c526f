package io.tqserve.kv.turbo;

/**
 * IEEE binary16 rounding as the codec spec uses it. {@code h(x)} is round-to-nearest-even with overflow to ±inf
 * ({@link Float#floatToFloat16}); a "half ÷" of two fp16 values is their float32 quotient rounded to fp16, which
 * equals the correctly rounded fp16 quotient because float32 carries more than 2·11+2 significand bits.
 */
public final class Fp16 {
    /** Largest finite fp16 value. */
    public static final float MAX = 65504f;

    private Fp16() {
    }

    /** h(x): x rounded to the nearest fp16 value (ties to even), overflow to ±inf, as a float. */
    public static float round(float x) {
        return Float.float16ToFloat(Float.floatToFloat16(x));
    }

    /** x rounded to fp16 like {@link #round} but clamped to ±65504 instead of overflowing; NaN stays NaN. */
    public static float roundSaturating(float x) {
        return round(Math.max(-MAX, Math.min(MAX, x)));
    }

    /** The smallest fp16 value ≥ x (x finite, |x| ≤ 65504). */
    public static float roundUp(float x) {
        short h = Float.floatToFloat16(x);
        float r = Float.float16ToFloat(h);
        if (r >= x) {
            return r;
        }
        return Float.float16ToFloat(nextUp(h));
    }

    /** The fp16 bit pattern of h(x). */
    public static short bits(float x) {
        return Float.floatToFloat16(x);
    }

    /** The float value of an fp16 bit pattern. */
    public static float value(short bits) {
        return Float.float16ToFloat(bits);
    }

    private static short nextUp(short h) {
        int b = h & 0xFFFF;
        if (b == 0x8000) {
            return 0x0001; // -0 → smallest positive subnormal
        }
        return (short) ((b & 0x8000) != 0 ? b - 1 : b + 1);
    }
}
