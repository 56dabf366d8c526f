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
     * Four dot products of rows w0..w3 (each n long, at offsets wOff + q·wStride of w) with x[xOff, xOff+n), into
     * out[0..3]. Each result is bit-identical to {@link #dot} of that row: register blocking for prefill must not
     * change a sequence's numbers.
     */
    default void dot4(float[] w, int wOff, int wStride, float[] x, int xOff, int n, float[] out) {
        for (int q = 0; q < 4; q++) {
            out[q] = dot(w, wOff + q * wStride, x, xOff, n);
        }
    }

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
