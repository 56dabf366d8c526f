package io.tqserve.backend.mlx;

import io.tqserve.backend.DecoderSpec;
import io.tqserve.backend.Matrix;
import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxScope;
import io.tqserve.backend.mlx.ffm.MlxStore;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Looks the decoder's tensors up by name among those MLX loaded, checks their shapes, converts them to the
 * compute dtype only when it differs from the stored one (in {@code native} mode nothing is converted, so the
 * arrays MLX loaded are the only copy), and keeps them in the decoder's store. Matrices are kept as transposed
 * views (in, out), so y = x · w; a transpose is a view in MLX, not a copy. One exception: float32 weights on MLX's
 * CPU device are converted into a row-contiguous (in, out) copy instead (the conversion makes a new buffer anyway),
 * because there MLX hands matmuls to BLAS {@code sgemm}, and with a transposed B OpenBLAS's packing of the weight
 * costs about 1.6× the CPU time of an untransposed one for the few activation rows of a decode step (measured
 * through these bindings: 2048×32000, 1 to 8 rows, 63 vs 39 ms of CPU per product). The Metal path keeps the
 * views its GEMV kernels are written for.
 */
final class MlxWeights {
    private final MlxScope s;
    private final MlxStore store;
    private final Map<String, MlxArray> all;
    private final DecoderSpec spec;
    final List<MlxArray> kept = new ArrayList<>();
    final List<Matrix> registered = new ArrayList<>();
    private final MlxBackend backend;
    MlxDtype dtype;

    MlxWeights(MlxBackend backend, MlxScope s, MlxStore store, Map<String, MlxArray> all, DecoderSpec spec) {
        this.backend = backend;
        this.s = s;
        this.store = store;
        this.all = all;
        this.spec = spec;
    }

    MlxArray raw(String name) {
        MlxArray a = all.get(name);
        if (a == null) {
            throw new IllegalArgumentException("weights lack tensor '" + name + "' (files " + spec.weightFiles() + ")");
        }
        return a;
    }

    boolean has(String name) {
        return all.containsKey(name);
    }

    /** A (rows, cols) matrix, kept transposed when {@code transposed}; the Java forward's matmuls reuse it. */
    MlxArray matrix(String name, int rows, int cols, boolean transposed) {
        MlxArray a = checked(name, rows, cols);
        MlxArray c = a.dtype() == dtype ? a : s.astype(a, dtype);
        MlxArray t = transposed ? s.transpose(c, 1, 0) : c;
        if (transposed && contiguousTranspose(name)) {
            MlxArray view = t;
            t = s.contiguous(view);
            s.eval(t);
            view.close(); // the float32 conversion it was copied from is freed now, not at the end of the load
            c.close();
        }
        MlxArray k = store.keep(t);
        kept.add(k);
        if (transposed) {
            register(name, k);
        }
        return k;
    }

    /** Whether {@link #matrix} keeps the transpose of {@code name} as a row-contiguous copy rather than a view. */
    boolean contiguousTranspose(String name) {
        return dtype == MlxDtype.FLOAT32 && raw(name).dtype() != dtype && backend.cpuDevice();
    }

    /** Makes the Java forward's matmul against the tensor {@code name} use {@code transposed}. */
    void register(String name, MlxArray transposed) {
        Matrix m = spec.javaMatrices().get(name);
        if (m != null) {
            backend.registerWeight(m, transposed);
            registered.add(m);
        }
    }

    MlxArray vector(String name, int n) {
        MlxArray a = raw(name);
        if (a.size() != n) {
            throw new IllegalArgumentException("tensor " + name + " has " + a.size() + " elements, expected " + n);
        }
        MlxArray k = store.keep(s.reshape(a.dtype() == dtype ? a : s.astype(a, dtype), n));
        kept.add(k);
        return k;
    }

    private MlxArray checked(String name, int... shape) {
        MlxArray a = raw(name);
        if (!Arrays.equals(a.shape(), shape)) {
            throw new IllegalArgumentException("tensor " + name + " has shape " + Arrays.toString(a.shape())
                    + ", expected " + Arrays.toString(shape));
        }
        return a;
    }
}
