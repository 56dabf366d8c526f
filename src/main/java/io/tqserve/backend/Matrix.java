package io.tqserve.backend;

import java.lang.foreign.MemorySegment;

/**
 * A read-only row-major weight matrix living off-heap (usually a slice of a memory-mapped safetensors file), dense
 * or group-affine quantized.
 *
 * @param data  the bytes, {@code rows * cols * dtype.bytes()} long, little-endian; for a quantized matrix the
 *              packed codes ({@code rows * cols * bits / 8} bytes, dtype U32)
 * @param dtype element type (U32 when quantized)
 * @param rows  output dimension (rows of W in {@code y = W x})
 * @param cols  input dimension
 * @param quant the scales, biases and code width of a quantized matrix, or null when dense
 */
public record Matrix(MemorySegment data, DType dtype, int rows, int cols, GroupQuant quant) {
    /** A dense matrix. */
    public Matrix(MemorySegment data, DType dtype, int rows, int cols) {
        this(data, dtype, rows, cols, null);
    }

    public Matrix {
        if ((dtype == DType.U32) != (quant != null)) {
            throw new IllegalArgumentException("a U32 matrix needs its quantization (scales, biases, bits) and only "
                    + "a U32 matrix has one");
        }
        if (quant != null) {
            long groups = (long) rows * (cols / quant.groupSize());
            long scaleBytes = groups * quant.scaleType().bytes();
            if (cols % quant.groupSize() != 0 || data.byteSize() != rows * quant.rowBytes(cols)
                    || quant.scales().byteSize() != scaleBytes || quant.biases().byteSize() != scaleBytes) {
                throw new IllegalArgumentException("quantized matrix " + rows + "x" + cols + " (" + quant.bits()
                        + " bits, group " + quant.groupSize() + ") does not match its data (" + data.byteSize()
                        + " bytes), scales (" + quant.scales().byteSize() + ") or biases ("
                        + quant.biases().byteSize() + ")");
            }
        }
        long need = (long) rows * cols * dtype.bytes();
        if (quant == null && data.byteSize() != need) {
            throw new IllegalArgumentException(
                    "matrix " + rows + "x" + cols + " " + dtype + " needs " + need + " bytes, got " + data.byteSize());
        }
    }

    /** Reads element (r, c) as float (slow path, for tests and tiny vectors). */
    public float get(int r, int c) {
        if (quant != null) {
            int groups = cols / quant.groupSize();
            int g = c / quant.groupSize();
            return GroupQuant.dequant(quant.code(data, r * quant.rowBytes(cols), c), quant.scale(r, g, groups),
                    quant.bias(r, g, groups));
        }
        return dtype.read(data, (long) r * cols + c);
    }

    public boolean quantized() {
        return quant != null;
    }

    /** Copies row r into dst[0..cols) as float. */
    public void row(int r, float[] dst) {
        for (int c = 0; c < cols; c++) {
            dst[c] = get(r, c);
        }
    }

    /** Bytes a pass over the matrix reads: the data, plus scales and biases when quantized. */
    public long byteSize() {
        return quant == null ? data.byteSize()
                : data.byteSize() + quant.scales().byteSize() + quant.biases().byteSize();
    }
}
