package io.tqserve.backend.cpu;

import io.tqserve.backend.ComputeBackend;
import io.tqserve.backend.Kernels;
import io.tqserve.backend.Matrix;
import java.util.function.IntConsumer;

/** The pure-Java CPU backend: Vector API kernels (or their scalar twins) on a dedicated kernel pool. */
public final class CpuBackend implements ComputeBackend {
    /** System property that switches the Vector API off ({@code -Dtqserve.vector=false}). */
    public static final String VECTOR_PROPERTY = "tqserve.vector";


    private final Kernels kernels;
    private final KernelPool pool;
    private final String why;
    private final ThreadLocal<float[]> rowScratch = new ThreadLocal<>();
    private final QuantizedMatmul quantized;

    public CpuBackend(Kernels kernels, int threads, String why) {
        this.kernels = kernels;
        this.pool = new KernelPool(threads);
        this.why = why;
        this.quantized = new QuantizedMatmul(kernels);
    }

    /**
     * Chooses the kernels once: the Vector API unless {@code -Dtqserve.vector=false} or the module is missing.
     *
     * @param threads worker threads; 0 = the physical cores
     */
    public static CpuBackend create(int threads) {
        int n = threads > 0 ? threads : PhysicalCores.count();
        boolean off = "false".equalsIgnoreCase(System.getProperty(VECTOR_PROPERTY, "true"));
        if (off) {
            return new CpuBackend(new ScalarKernels(), n, "scalar kernels (-D" + VECTOR_PROPERTY + "=false), " + n
                    + " threads");
        }
        if (!vectorApiPresent()) {
            return new CpuBackend(new ScalarKernels(), n,
                    "scalar kernels (module jdk.incubator.vector not in the boot layer: run with --add-modules "
                            + "jdk.incubator.vector), " + n + " threads");
        }
        return new CpuBackend(new VectorKernels(), n, "Vector API " + VectorKernels.F.vectorBitSize() + "-bit ("
                + VectorKernels.lanes() + " floats), " + n + " threads");
    }

    /** True when jdk.incubator.vector is resolved in the boot layer (--add-modules jdk.incubator.vector). */
    public static boolean vectorApiPresent() {
        return ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent();
    }

    @Override
    public String name() {
        return "cpu";
    }

    @Override
    public String describe() {
        return "cpu: " + why;
    }

    @Override
    public Kernels kernels() {
        return kernels;
    }

    @Override
    public int threads() {
        return pool.threads();
    }

    @Override
    public void matmul(Matrix w, float[] x, int rows, float[] out) {
        if (w.quantized()) {
            quantized.matmul(pool, w, x, rows, out);
            return;
        }
        int outDim = w.rows();
        int inDim = w.cols();
        int blocks = Math.max(1, Math.min(outDim / 8, pool.threads() * 8));
        int per = ((outDim + blocks - 1) / blocks + 3) / 4 * 4; // whole 4-row blocks for matvec and the tiles
        int nBlocks = (outDim + per - 1) / per;
        pool.parallelFor(nBlocks, b -> {
            int from = b * per;
            int to = Math.min(outDim, from + per);
            if (rows == 1) {
                // matrix-vector: four weight rows at a time, read straight from their bytes
                for (int j = from; j < to; j += 4) {
                    kernels.matvec(w, j, Math.min(4, to - j), x, 0, out, j);
                }
                return;
            }
            // matrix-matrix: four weight rows decoded once, then 4x4 tiles against the activation rows
            float[] wRows = scratch(4 * inDim);
            for (int j = from; j < to; j += 4) {
                int count = Math.min(4, to - j);
                for (int q = 0; q < count; q++) {
                    kernels.decodeRow(w, j + q, wRows, q * inDim);
                }
                for (int r = 0; r < rows; r += 4) {
                    kernels.tile(wRows, 0, count, x, r * inDim, Math.min(4, rows - r), inDim, out, r * outDim + j,
                            outDim);
                }
            }
        });
    }

    private float[] scratch(int n) {
        float[] s = rowScratch.get();
        if (s == null || s.length < n) {
            s = new float[n];
            rowScratch.set(s);
        }
        return s;
    }

    @Override
    public void parallelFor(int n, IntConsumer body) {
        pool.parallelFor(n, body);
    }

    @Override
    public void close() {
        pool.close();
    }
}
