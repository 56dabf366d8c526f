package io.tqserve.backend.cpu;

import io.tqserve.backend.Kernels;
import io.tqserve.backend.Matrix;

/** The scalar twin of {@link VectorKernels}: plain loops, float32 accumulation. The reference the parity tests use. */
public final class ScalarKernels implements Kernels {

    @Override
    public String name() {
        return "scalar";
    }

    @Override
    public float dot(float[] a, int aOff, float[] b, int bOff, int n) {
        float sum = 0f;
        for (int i = 0; i < n; i++) {
            sum += a[aOff + i] * b[bOff + i];
        }
        return sum;
    }

    @Override
    public float dotRow(Matrix w, int row, float[] x, int xOff) {
        float sum = 0f;
        int cols = w.cols();
        for (int c = 0; c < cols; c++) {
            sum += w.get(row, c) * x[xOff + c];
        }
        return sum;
    }

    @Override
    public void matvec(Matrix w, int row, int count, float[] x, int xOff, float[] out, int outOff) {
        for (int q = 0; q < count; q++) {
            out[outOff + q] = dotRow(w, row + q, x, xOff);
        }
    }

    @Override
    public void tile(float[] w, int wOff, int wCount, float[] x, int xOff, int xCount, int n, float[] out,
            int outOff, int outStride) {
        for (int r = 0; r < xCount; r++) {
            for (int q = 0; q < wCount; q++) {
                out[outOff + r * outStride + q] = dot(w, wOff + q * n, x, xOff + r * n, n);
            }
        }
    }

    @Override
    public void decodeRow(Matrix w, int row, float[] dst, int dOff) {
        int cols = w.cols();
        for (int c = 0; c < cols; c++) {
            dst[dOff + c] = w.get(row, c);
        }
    }

    @Override
    public void axpyRow(float a, Matrix w, int row, float[] y, int yOff) {
        int cols = w.cols();
        for (int c = 0; c < cols; c++) {
            y[yOff + c] += a * w.get(row, c);
        }
    }

    @Override
    public void axpy(float a, float[] x, int xOff, float[] y, int yOff, int n) {
        for (int i = 0; i < n; i++) {
            y[yOff + i] += a * x[xOff + i];
        }
    }

    @Override
    public void scale(float[] x, int off, int n, float a) {
        for (int i = 0; i < n; i++) {
            x[off + i] *= a;
        }
    }

    @Override
    public void rmsnorm(float[] out, int oOff, float[] x, int xOff, float[] weight, int n, float eps) {
        float ss = 0f;
        for (int i = 0; i < n; i++) {
            float v = x[xOff + i];
            ss += v * v;
        }
        float inv = (float) (1.0 / Math.sqrt(ss / n + eps));
        for (int i = 0; i < n; i++) {
            out[oOff + i] = weight[i] * (x[xOff + i] * inv);
        }
    }

    @Override
    public void softmax(float[] x, int off, int n) {
        float max = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < n; i++) {
            max = Math.max(max, x[off + i]);
        }
        float sum = 0f;
        for (int i = 0; i < n; i++) {
            float e = (float) Math.exp(x[off + i] - max);
            x[off + i] = e;
            sum += e;
        }
        float inv = 1f / sum;
        for (int i = 0; i < n; i++) {
            x[off + i] *= inv;
        }
    }

    @Override
    public void swiglu(float[] gate, int gOff, float[] up, int uOff, int n) {
        for (int i = 0; i < n; i++) {
            float g = gate[gOff + i];
            gate[gOff + i] = (float) (g / (1.0 + Math.exp(-g))) * up[uOff + i];
        }
    }

    @Override
    public void add(float[] x, int xOff, float[] y, int yOff, int n) {
        for (int i = 0; i < n; i++) {
            x[xOff + i] += y[yOff + i];
        }
    }
}
