package io.tqserve.kv.turbo;

import io.tqserve.kv.KvScheme;

/**
 * Byte layout of one TurboQuant entry: one token of one KV head, K and V together. Sections in this order, with no
 * padding (G = headDim/32 groups):
 * <pre>
 *   keyCodesOffset()    K codes     headDim·kBits/8 bytes (8-bit: one byte per element, two's complement if signed;
 *                                   2/4/5-bit: LSB-first little-endian bitstream)
 *   keyScalesOffset()   K scales    G fp16, little-endian
 *   keyZerosOffset()    K zeros     G fp16, little-endian
 *   valueCodesOffset()  V codes     headDim·vBits/8 bytes (LSB-first bitstream; 8-bit: one byte per element)
 *   valueScalesOffset() V scales    G fp16, little-endian
 * </pre>
 * The sections are those of vllm-metal's five per-layer cache arrays laid side by side, so each section's bytes
 * equal the reference's bytes for that token and head.
 *
 * @param keyQuant key quantizer
 * @param vBits    value bits (2, 3, 4, 5, 8)
 * @param headDim  head dimension (64, 128, 256, 512)
 */
public record TurboLayout(KeyQuant keyQuant, int vBits, int headDim) {
    /** Elements per scale group, along head_dim. */
    public static final int GROUP = 32;

    public TurboLayout {
        if (keyQuant == null) {
            throw new IllegalArgumentException("keyQuant is required");
        }
        TurboConstants.checkValueBits(vBits);
        TurboConstants.checkHeadDim(headDim);
    }

    /** The layout a {@code turbo:k<k>v<v>} scheme selects (8-bit keys are signed q8_0). */
    public static TurboLayout of(KvScheme.Turbo scheme, int headDim) {
        return new TurboLayout(KeyQuant.forSchemeBits(scheme.kBits()), scheme.vBits(), headDim);
    }

    public int kBits() {
        return keyQuant.bits();
    }

    /** Scale groups per head: headDim/32. */
    public int groups() {
        return headDim / GROUP;
    }

    public int keyCodesOffset() {
        return 0;
    }

    public int keyCodeBytes() {
        return headDim * keyQuant.bits() / 8;
    }

    public int keyScalesOffset() {
        return keyCodeBytes();
    }

    public int keyZerosOffset() {
        return keyScalesOffset() + 2 * groups();
    }

    public int valueCodesOffset() {
        return keyZerosOffset() + 2 * groups();
    }

    public int valueCodeBytes() {
        return headDim * vBits / 8;
    }

    public int valueScalesOffset() {
        return valueCodesOffset() + valueCodeBytes();
    }

    /** Bytes of the whole entry: headDim·(kBits+vBits)/8 + 6·headDim/32. */
    public int bytes() {
        return valueScalesOffset() + 2 * groups();
    }

    /** bf16 K+V bytes (4·headDim) divided by {@link #bytes()}: 32/(kBits+vBits+1.5). */
    public double ratioVsBf16() {
        return 4.0 * headDim / bytes();
    }
}
