package io.tqserve.backend;

import java.lang.foreign.MemorySegment;

/**
 * A read-only row-major weight matrix living off-heap (usually a slice of a memory-mapped safetensors file).
 *
 * @param data  the bytes, {@code rows * cols * dtype.bytes()} long, little-endian
 * @param dtype element type
 * @param rows  output dimension (rows of W in {@code y = W x})
 * @param cols  input dimension
 */
public record Matrix(MemorySegment data, DType dtype, int rows, int cols) {
    public Matrix {
        long need = (long) rows * cols * dtype.bytes();
        if (data.byteSize() != need) {
            throw new IllegalArgumentException(
                    "matrix " + rows + "x" + cols + " " + dtype + " needs " + need + " bytes, got " + data.byteSize());
        }
    }

    /** Reads element (r, c) as float (slow path, for tests and tiny vectors). */
    public float get(int r, int c) {
        long i = (long) r * cols + c;
        return switch (dtype) {
            case BF16 -> Float.intBitsToFloat((data.getAtIndex(Layouts.SHORT_LE, i) & 0xFFFF) << 16);
            case F16 -> Float.float16ToFloat(data.getAtIndex(Layouts.SHORT_LE, i));
            case F32 -> data.getAtIndex(Layouts.FLOAT_LE, i);
        };
    }

    /** Copies row r into dst[0..cols) as float. */
    public void row(int r, float[] dst) {
        for (int c = 0; c < cols; c++) {
            dst[c] = get(r, c);
        }
    }

    public long byteSize() {
        return data.byteSize();
    }
}
