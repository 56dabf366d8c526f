package io.tqserve.backend.cpu;

import io.tqserve.backend.Kernels;
import io.tqserve.backend.Matrix;

/**
 * The matmul of a group-affine quantized matrix ({@link io.tqserve.backend.GroupQuant}) on the CPU backend's pool:
 * the same split into 4-row blocks as the dense matmul of {@link CpuBackend}. 4- and 8-bit matrices on 256-bit or
 * wider vectors run {@link QuantizedVector}'s kernels, which read the packed codes in registers, for each activation
 * row against each block of four weight rows (the block stays in cache across the rows, so each weight byte comes
 * from memory once per call). Other code widths, narrower vectors and the scalar kernels decode four weight rows at a
 * time to floats with {@link QuantizedScalar} (never more: no dense copy of the matrix) and run the float tiles.
 * Either way an output gets the same arithmetic whatever the batch, so batching never changes a sequence's numbers.
 */
final class QuantizedMatmul {
    private final Kernels kernels;
    private final boolean vector;
    private final ThreadLocal<float[]> rowScratch = new ThreadLocal<>();
    private final ThreadLocal<float[]> xScratch = new ThreadLocal<>();
    private final ThreadLocal<float[]> sumScratch = new ThreadLocal<>();
    private final ThreadLocal<float[]> scaleScratch = new ThreadLocal<>();

    QuantizedMatmul(Kernels kernels) {
        this.kernels = kernels;
        this.vector = kernels instanceof VectorKernels;
    }

    void matmul(KernelPool pool, Matrix w, float[] x, int rows, float[] out) {
        int outDim = w.rows();
        int inDim = w.cols();
        boolean fast = vector && QuantizedVector.handles(w);
        float[] xs = x;
        float[] sums = null;
        int groups = inDim / w.quant().groupSize();
        if (fast) {
            xs = scratch(xScratch, rows * inDim);
            sums = scratch(sumScratch, rows * groups);
            for (int r = 0; r < rows; r++) {
                QuantizedVector.permute(w.quant().bits(), x, r * inDim, inDim, xs, r * inDim);
                QuantizedVector.groupSums(x, r * inDim, inDim, w.quant().groupSize(), sums, r * groups);
            }
        }
        float[] xin = xs;
        float[] xsum = sums;
        int blocks = Math.max(1, Math.min(outDim / 8, pool.threads() * 8));
        int per = ((outDim + blocks - 1) / blocks + 3) / 4 * 4;
        int nBlocks = (outDim + per - 1) / per;
        pool.parallelFor(nBlocks, b -> {
            int from = b * per;
            int to = Math.min(outDim, from + per);
            float[] wRows = null;
            float[] sb = fast ? scratch(scaleScratch, 4 * groups + 4) : null;
            for (int j = from; j < to; j += 4) {
                int count = Math.min(4, to - j);
                if (fast) {
                    for (int r = 0; r < rows; r++) {
                        if (w.quant().bits() == 4) {
                            QuantizedVector.matvecQ4(w, j, count, xin, r * inDim, xsum, r * groups, sb, out,
                                    r * outDim + j);
                        } else {
                            QuantizedVector.matvecQ8(w, j, count, xin, r * inDim, xsum, r * groups, sb, out,
                                    r * outDim + j);
                        }
                    }
                    continue;
                }
                if (wRows == null) {
                    wRows = scratch(rowScratch, 4 * inDim);
                }
                QuantizedScalar.decodeRows(w, j, count, wRows);
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
