package io.tqserve.backend.cpu;

import io.tqserve.backend.GroupQuant;
import io.tqserve.backend.Matrix;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The scalar twin of {@link QuantizedVector}, for every code width MLX packs (2, 3, 4, 5, 6, 8 bits): a row's codes
 * are read from its little-endian bit stream (see {@link GroupQuant}) and dequantized in column order with the same
 * fused multiply-add. Used by the scalar kernels, by the vector kernels for widths they have no fast path for, and
 * as the reference of the parity tests.
 */
final class QuantizedScalar {
    private QuantizedScalar() {
    }

    /** Rows row..row+count-1 of w dequantized in column order to dst + r·cols. */
    static void decodeRows(Matrix w, int row, int count, float[] dst) {
        for (int r = 0; r < count; r++) {
            decodeRow(w, row + r, dst, r * w.cols());
        }
    }

    /** Row r of w dequantized in column order to dst[dOff..dOff+cols). */
    static void decodeRow(Matrix w, int r, float[] dst, int dOff) {
        GroupQuant q = w.quant();
        int n = w.cols();
        int gs = q.groupSize();
        int groups = n / gs;
        int bits = q.bits();
        int mask = (1 << bits) - 1;
        MemorySegment seg = w.data();
        long base = r * q.rowBytes(n);
        long acc = 0; // bit buffer: the next `have` bits of the stream, LSB first
        int have = 0;
        long at = base;
        for (int g = 0; g < groups; g++) {
            float scale = q.scale(r, g, groups);
            float bias = q.bias(r, g, groups);
            for (int c = g * gs, end = c + gs; c < end; c++) {
                while (have < bits) {
                    acc |= (long) (seg.get(ValueLayout.JAVA_BYTE, at++) & 0xFF) << have;
                    have += 8;
                }
                dst[dOff + c] = GroupQuant.dequant((int) (acc & mask), scale, bias);
                acc >>>= bits;
                have -= bits;
            }
        }
    }
}
