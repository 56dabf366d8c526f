package io.tqserve.backend;

/** Element types of weight tensors the backends read. */
public enum DType {
    BF16(2), F16(2), F32(4);

    private final int bytes;

    DType(int bytes) {
        this.bytes = bytes;
    }

    public int bytes() {
        return bytes;
    }

    /** Parses a safetensors dtype tag ("BF16", "F16", "F32"); other tags are refused with the accepted set. */
    public static DType fromSafetensors(String tag) {
        return switch (tag) {
            case "BF16" -> BF16;
            case "F16" -> F16;
            case "F32" -> F32;
            default -> throw new IllegalArgumentException(
                    "unsupported tensor dtype " + tag + " (supported: BF16, F16, F32)");
        };
    }
}
