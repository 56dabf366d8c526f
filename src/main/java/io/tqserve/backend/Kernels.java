package io.tqserve.backend;

/**
 * The numeric kernels of the forward pass. Two implementations exist: {@code backend.cpu.VectorKernels}
 * (Vector API) and its scalar twin {@code backend.cpu.ScalarKernels}; parity tests hold them together.
 * All accumulation is float32.
 */
public interface Kernels {
    /** "vector" or "scalar". */
    String name();

    /** Σ a[aOff+i]·b[bOff+i], i < n. */
    float dot(float[] a, int aOff, float[] b, int bOff, int n);

    /**
     * The matrix-vector kernel of matmul: rows {@code row .. row+count-1} of w (count 1..4) times x[xOff, xOff+cols):
     * out[outOff+q] = Σ w[row+q, i]·x[xOff+i]. Together with {@link #tile} these are the matmul kernels, and they
     * give an output the same bits whichever of them computes it and in whatever group: batching rows (decode
     * streams, prefill tokens) must not change a sequence's numbers.
     */
    void matvec(Matrix w, int row, int count, float[] x, int xOff, float[] out, int outOff);

    /**
     * The matrix-matrix kernel of matmul: wCount float rows of w (1..4, each n long, at wOff + q·n) times xCount rows
     * of x (1..4, at xOff + r·n): out[outOff + r·outStride + q] = Σ w[wOff+q·n+i]·x[xOff+r·n+i]. Bit-identical to
     * {@link #matvec} of the same rows (see there).
     */
    void tile(float[] w, int wOff, int wCount, float[] x, int xOff, int xCount, int n, float[] out, int outOff,
            int outStride);

    /** Σ w[row, i]·x[xOff+i], i < w.cols(): the matrix row is read straight from its off-heap bytes. */
    float dotRow(Matrix w, int row, float[] x, int xOff);

    /** dst[dOff+i] = w[row, i] as float, i < w.cols(). */
    void decodeRow(Matrix w, int row, float[] dst, int dOff);

    /** y[yOff+i] += a·w[row, i], i < w.cols(): the matrix row is read straight from its off-heap bytes. */
    void axpyRow(float a, Matrix w, int row, float[] y, int yOff);

    /** y[yOff+i] += a·x[xOff+i], i < n. */
    void axpy(float a, float[] x, int xOff, float[] y, int yOff, int n);

    /** x[off+i] *= a, i < n. */
    void scale(float[] x, int off, int n, float a);

    /** out[oOff+i] = x[xOff+i] / rms(x) · weight[i], with rms = sqrt(mean(x²) + eps). out may alias x. */
    void rmsnorm(float[] out, int oOff, float[] x, int xOff, float[] weight, int n, float eps);

    /** In-place numerically stable softmax of x[off, off+n). */
    void softmax(float[] x, int off, int n);

    /** gate[gOff+i] = silu(gate[gOff+i]) · up[uOff+i], i < n. */
    void swiglu(float[] gate, int gOff, float[] up, int uOff, int n);

    /** x[xOff+i] += y[yOff+i], i < n. */
    void add(float[] x, int xOff, float[] y, int yOff, int n);
}
