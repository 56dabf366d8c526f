package io.tqserve.backend;

import java.lang.foreign.MemorySegment;

/**
 * The group-affine quantization of a weight matrix, as MLX stores it ({@code mx.quantize}, mode "affine"): each row
 * is cut into groups of {@code groupSize} columns; column c of row r is the code q (an unsigned {@code bits}-bit
 * integer) times the group's scale plus its bias: {@code w = scale·q + bias}. The codes of a row form one
 * little-endian bit stream, LSB first: code i occupies bits {@code [i·bits, (i+1)·bits)} of the row's bytes (for 4
 * bits: byte m holds codes 2m in its low and 2m+1 in its high nibble). MLX stores the stream as uint32 words of
 * {@code 32/bits} codes for 2, 4 and 8 bits and as byte triples/quintuples for 3, 5 and 6 bits; both are the same
 * bit stream.
 *
 * @param bits      code width: 2, 3, 4, 5, 6 or 8
 * @param groupSize columns per scale/bias: 32, 64 or 128
 * @param scales    (rows, cols/groupSize) in {@code scaleType}
 * @param biases    (rows, cols/groupSize) in {@code scaleType}
 * @param scaleType dtype of scales and biases as written (BF16, F16 or F32)
 */
public record GroupQuant(int bits, int groupSize, MemorySegment scales, MemorySegment biases, DType scaleType) {
    public GroupQuant {
        if (!supportedBits(bits)) {
            throw new IllegalArgumentException("unsupported bits " + bits + " (supported: 2, 3, 4, 5, 6, 8)");
        }
        if (!supportedGroupSize(groupSize)) {
            throw new IllegalArgumentException("unsupported group_size " + groupSize + " (supported: 32, 64, 128)");
        }
        if (scaleType == DType.U32) {
            throw new IllegalArgumentException("scales and biases must be BF16, F16 or F32, got U32");
        }
    }

    public static boolean supportedBits(int bits) {
        return bits >= 2 && bits <= 8 && bits != 7;
    }

    public static boolean supportedGroupSize(int groupSize) {
        return groupSize == 32 || groupSize == 64 || groupSize == 128;
    }

    /** Bytes of one packed row of {@code cols} codes. */
    public long rowBytes(int cols) {
        return (long) cols * bits / 8;
    }

    /** Scale of group g of row r (groups per row = cols / groupSize). */
    public float scale(int r, int g, int groupsPerRow) {
        return scaleType.read(scales, (long) r * groupsPerRow + g);
    }

    /** Bias of group g of row r. */
    public float bias(int r, int g, int groupsPerRow) {
        return scaleType.read(biases, (long) r * groupsPerRow + g);
    }

    /** Code i of the bit stream that starts at byte {@code base} of {@code packed}. */
    public int code(MemorySegment packed, long base, int i) {
        long bit = (long) i * bits;
        long at = base + (bit >>> 3);
        int shift = (int) (bit & 7);
        int word = packed.get(java.lang.foreign.ValueLayout.JAVA_BYTE, at) & 0xFF;
        if (shift + bits > 8) {
            word |= (packed.get(java.lang.foreign.ValueLayout.JAVA_BYTE, at + 1) & 0xFF) << 8;
        }
        return (word >>> shift) & ((1 << bits) - 1);
    }

    /**
     * The dequantized value {@code scale·q + bias} as one fused multiply-add: the single rounding every kernel
     * (scalar, Vector API, decoded rows) uses, so they agree to the bit on the weights.
     */
    public static float dequant(int q, float scale, float bias) {
        return Math.fma((float) q, scale, bias);
    }
}
