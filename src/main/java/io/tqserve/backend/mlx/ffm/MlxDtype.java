package io.tqserve.backend.mlx.ffm;

/** MLX-C's {@code mlx_dtype} enum, in declaration order (the ordinal is the C value). */
public enum MlxDtype {
    BOOL(1), UINT8(1), UINT16(2), UINT32(4), UINT64(8), INT8(1), INT16(2), INT32(4), INT64(8), FLOAT16(2),
    FLOAT32(4), FLOAT64(8), BFLOAT16(2), COMPLEX64(8);

    private final int bytes;

    MlxDtype(int bytes) {
        this.bytes = bytes;
    }

    public int bytes() {
        return bytes;
    }

    /** The C enum value. */
    int c() {
        return ordinal();
    }

    static MlxDtype ofC(int value) {
        MlxDtype[] all = values();
        if (value < 0 || value >= all.length) {
            throw new MlxException("unknown mlx_dtype " + value);
        }
        return all[value];
    }
}
