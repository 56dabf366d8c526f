package io.tqserve.backend;

/**
 * Element types of weight tensors the backends read. U32 holds the packed codes of group-affine quantized weights
 * (MLX's format, see {@link GroupQuant}); it is never a float matrix on its own.
 */
public enum DType {
    BF16(2), F16(2), F32(4), U32(4);

    private final int bytes;

    DType(int bytes) {
        this.bytes = bytes;
    }

    public int bytes() {
        return bytes;
    }

    /** Reads element i of a little-endian array of this float type (not U32) as float. */
    public float read(java.lang.foreign.MemorySegment seg, long i) {
        return switch (this) {
            case BF16 -> Float.intBitsToFloat((seg.getAtIndex(Layouts.SHORT_LE, i) & 0xFFFF) << 16);
            case F16 -> Float.float16ToFloat(seg.getAtIndex(Layouts.SHORT_LE, i));
            case F32 -> seg.getAtIndex(Layouts.FLOAT_LE, i);
            case U32 -> throw new IllegalStateException("U32 holds packed quantized codes, not floats");
        };
    }

    /** Parses a safetensors dtype tag ("BF16", "F16", "F32"); other tags are refused with the accepted set. */
    public static DType fromSafetensors(String tag) {
        return switch (tag) {
            case "BF16" -> BF16;
            case "F16" -> F16;
            case "F32" -> F32;
            case "U32" -> U32;
            default -> throw new IllegalArgumentException(
                    "unsupported tensor dtype " + tag + " (supported: BF16, F16, F32, U32 for packed quantized weights)");
        };
    }
}
