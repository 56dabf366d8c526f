package io.tqserve.kv.turbo;

/**
 * The shared constants of the TurboQuant codec, as float arrays: FWHT sign vectors (one independent ±1 vector per
 * head_dim, not prefixes of one another), 1/√d, and the value codebooks with the boundaries the Metal encoder uses
 * (midpoints {@code 0.5f·(c[k]+c[k+1])}, spec §6a). Public accessors return copies; the codec reads the shared
 * arrays directly.
 */
public final class TurboConstants {
    /** Value bit widths vllm-metal accepts (q2_0 … q8_0). */
    public static final int[] V_BITS = {2, 3, 4, 5, 8};
    /** Head dims with a sign vector. */
    public static final int[] HEAD_DIMS = {64, 128, 256, 512};

    private static final float[] SIGNS_64 = signs(TurboTables.SIGN01_64);
    private static final float[] SIGNS_128 = signs(TurboTables.SIGN01_128);
    private static final float[] SIGNS_256 = signs(TurboTables.SIGN01_256);
    private static final float[] SIGNS_512 = signs(TurboTables.SIGN01_512);

    private static final float[][] CENTROIDS = new float[9][];
    private static final float[][] BOUNDARIES = new float[9][];

    static {
        CENTROIDS[2] = floats(TurboTables.CENTROIDS_2_BITS);
        CENTROIDS[3] = floats(TurboTables.CENTROIDS_3_BITS);
        CENTROIDS[4] = floats(TurboTables.CENTROIDS_4_BITS);
        CENTROIDS[5] = floats(TurboTables.CENTROIDS_5_BITS);
        CENTROIDS[8] = floats(TurboTables.CENTROIDS_8_BITS);
        for (int b : V_BITS) {
            float[] c = CENTROIDS[b];
            if (c.length != 1 << b) {
                throw new IllegalStateException("codebook " + b + " has " + c.length + " centroids");
            }
            float[] bnd = new float[c.length - 1];
            for (int k = 0; k < bnd.length; k++) {
                bnd[k] = 0.5f * (c[k] + c[k + 1]); // float32 sum, then float32 product, as tq_encode
            }
            BOUNDARIES[b] = bnd;
        }
    }

    private TurboConstants() {
    }

    /** True for the head dims the codec serves: 64, 128, 256, 512. */
    public static boolean supportsHeadDim(int headDim) {
        return headDim == 64 || headDim == 128 || headDim == 256 || headDim == 512;
    }

    /** True for value bit widths 2, 3, 4, 5, 8. */
    public static boolean supportsValueBits(int vBits) {
        return vBits == 2 || vBits == 3 || vBits == 4 || vBits == 5 || vBits == 8;
    }

    /** A copy of the ±1 sign vector σ for {@code headDim}. */
    public static float[] signs(int headDim) {
        return signsShared(headDim).clone();
    }

    /** A copy of the 2^vBits centroids, ascending. */
    public static float[] centroids(int vBits) {
        return centroidsShared(vBits).clone();
    }

    /** A copy of the 2^vBits − 1 encoder boundaries, ascending. */
    public static float[] boundaries(int vBits) {
        return boundariesShared(vBits).clone();
    }

    /** float32(1/√d): 0.125, 0x3DB504F3, 0.0625, 0x3D3504F3 for d = 64, 128, 256, 512. */
    public static float invSqrtN(int headDim) {
        return switch (headDim) {
            case 64 -> 0.125f;
            case 128 -> Float.intBitsToFloat(0x3DB504F3);
            case 256 -> 0.0625f;
            case 512 -> Float.intBitsToFloat(0x3D3504F3);
            default -> throw badHeadDim(headDim);
        };
    }

    static float[] signsShared(int headDim) {
        return switch (headDim) {
            case 64 -> SIGNS_64;
            case 128 -> SIGNS_128;
            case 256 -> SIGNS_256;
            case 512 -> SIGNS_512;
            default -> throw badHeadDim(headDim);
        };
    }

    static float[] centroidsShared(int vBits) {
        checkValueBits(vBits);
        return CENTROIDS[vBits];
    }

    static float[] boundariesShared(int vBits) {
        checkValueBits(vBits);
        return BOUNDARIES[vBits];
    }

    static void checkHeadDim(int headDim) {
        if (!supportsHeadDim(headDim)) {
            throw badHeadDim(headDim);
        }
    }

    static void checkValueBits(int vBits) {
        if (!supportsValueBits(vBits)) {
            throw new IllegalArgumentException("value bits " + vBits + " not supported (needs 2, 3, 4, 5 or 8)");
        }
    }

    private static IllegalArgumentException badHeadDim(int headDim) {
        return new IllegalArgumentException("head_dim " + headDim + " not supported by TurboQuant (needs 64, 128, 256 or 512)");
    }

    private static float[] signs(String sign01) {
        float[] s = new float[sign01.length()];
        for (int i = 0; i < s.length; i++) {
            s[i] = sign01.charAt(i) == '1' ? -1f : 1f;
        }
        return s;
    }

    private static float[] floats(int[] bits) {
        float[] f = new float[bits.length];
        for (int i = 0; i < f.length; i++) {
            f[i] = Float.intBitsToFloat(bits[i]);
        }
        return f;
    }
}
