package io.tqserve.backend.cpu;

import io.tqserve.backend.Kernels;
import io.tqserve.backend.Matrix;

/**
 * The matmul of a group-affine quantized matrix ({@link io.tqserve.backend.GroupQuant}) on the CPU backend's pool:
 * the same split into 4-row blocks as the dense matmul of {@link CpuBackend}. One activation row (decode) runs the
 * matrix-vector kernels that dequantize in registers ({@link QuantizedVector}, 4 and 8 bits); several rows decode
 * four weight rows at a time to floats (never more: the dense matrix is never materialised) and run the float
 * tiles against every activation row, so each weight byte is read once per call. Both paths give each output the
 * same arithmetic in the same order, so a sequence's numbers do not depend on the batch it runs in. Other code
 * widths, narrow vectors and the scalar kernels decode rows with {@link QuantizedScalar}.
 */
final class QuantizedMatmul {
    private final Kernels kernels;
    private final boolean vector;
    private final ThreadLocal<float[]> rowScratch = new ThreadLocal<>();
    private final ThreadLocal<float[]> xScratch = new ThreadLocal<>();

    QuantizedMatmul(Kernels kernels) {
        this.kernels = kernels;
        this.vector = kernels instanceof VectorKernels;
    }

    void matmul(KernelPool pool, Matrix w, float[] x, int rows, float[] out) {
        int outDim = w.rows();
        int inDim = w.cols();
        boolean fast = vector && QuantizedVector.handles(w);
        float[] xs = x;
        if (fast && QuantizedVector.nibbleOrder(w)) {
            xs = scratch(xScratch, rows * inDim);
            for (int r = 0; r < rows; r++) {
                QuantizedVector.permute4(x, r * inDim, inDim, xs, r * inDim);
            }
        }
        float[] xin = xs;
        int blocks = Math.max(1, Math.min(outDim / 8, pool.threads() * 8));
        int per = ((outDim + blocks - 1) / blocks + 3) / 4 * 4;
        int nBlocks = (outDim + per - 1) / per;
        pool.parallelFor(nBlocks, b -> {
            int from = b * per;
            int to = Math.min(outDim, from + per);
            float[] wRows = null;
            for (int j = from; j < to; j += 4) {
                int count = Math.min(4, to - j);
                if (rows == 1 && fast && count == 4) {
                    if (w.quant().bits() == 4) {
                        QuantizedVector.matvec4Q4(w, j, xin, 0, out, j);
                    } else {
                        QuantizedVector.matvec4Q8(w, j, xin, 0, out, j);
                    }
                    continue;
                }
                if (wRows == null) {
                    wRows = scratch(rowScratch, 4 * inDim);
                }
                if (fast) {
                    QuantizedVector.decodeRows(w, j, count, wRows);
                } else {
                    QuantizedScalar.decodeRows(w, j, count, wRows);
                }
                for (int r = 0; r < rows; r += 4) {
                    kernels.tile(wRows, 0, count, xin, r * inDim, Math.min(4, rows - r), inDim, out, r * outDim + j,
                            outDim);
                }
            }
        });
    }

    private static float[] scratch(ThreadLocal<float[]> holder, int n) {
        float[] s = holder.get();
        if (s == null || s.length < n) {
            s = new float[n];
            holder.set(s);
        }
        return s;
    }
}
