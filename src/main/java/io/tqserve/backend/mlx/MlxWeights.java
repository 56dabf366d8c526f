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
 * arrays MLX loaded are the only copy), and keeps them in the decoder's store. Dense matrices that multiply
 * inputs get a transposed view (in, out), so y = x · w; a transpose is a view in MLX, not a copy. Quantized
 * matrices are kept as their three stored arrays ({@link MlxLinear}), never dequantized as a whole.
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

    /**
     * The compute dtype's source for module {@code name}'s weight: its own float dtype, or for packed quantized
     * words the dtype of the module's scales.
     */
    MlxDtype storedFloatType(String name) {
        MlxArray a = raw(name);
        return a.dtype() == MlxDtype.UINT32 ? raw(module(name) + ".scales").dtype() : a.dtype();
    }

    /**
     * The (rows, cols) weight {@code name} of a linear layer, dense or quantized as the Java forward's matrix of
     * that name says (bits and group size from the model's quantization block). {@code applied}: the layer
     * multiplies inputs (a projection, the LM head, a tied embedding); then a dense weight gets its transposed view
     * and the Java forward's matmul against that matrix runs on the device against these arrays. A dense weight is
     * converted to the compute dtype when it differs; a quantized one is kept as stored (words, scales, biases).
     */
    MlxLinear linear(String name, int rows, int cols, boolean applied) {
        Matrix m = spec.javaMatrices().get(name);
        MlxLinear lin;
        if (m != null && m.quantized()) {
            lin = quantized(name, rows, cols, m.quant().bits(), m.quant().groupSize());
        } else {
            MlxArray a = checked(name, rows, cols);
            MlxArray c = store.keep(a.dtype() == dtype ? a : s.astype(a, dtype));
            kept.add(c);
            MlxArray t = null;
            if (applied) {
                t = store.keep(s.transpose(c, 1, 0));
                kept.add(t);
            }
            lin = MlxLinear.dense(c, t);
        }
        if (applied) {
            register(name, lin);
        }
        return lin;
    }

    private MlxLinear quantized(String name, int rows, int cols, int bits, int groupSize) {
        String module = module(name);
        MlxArray words = raw(name);
        MlxArray scales = raw(module + ".scales");
        MlxArray biases = raw(module + ".biases");
        if (words.dtype() != MlxDtype.UINT32) {
            throw new IllegalArgumentException("tensor " + name + " of quantized module " + module + " is "
                    + words.dtype() + ", expected uint32 packed codes");
        }
        checkShape(name, words, rows, cols * bits / 32);
        checkShape(module + ".scales", scales, rows, cols / groupSize);
        checkShape(module + ".biases", biases, rows, cols / groupSize);
        MlxLinear lin = MlxLinear.quantized(store.keep(words), store.keep(scales), store.keep(biases), groupSize, bits,
                dtype);
        kept.addAll(java.util.List.of(lin.weight(), lin.scales(), lin.biases()));
        return lin;
    }

    private static String module(String name) {
        return name.endsWith(".weight") ? name.substring(0, name.length() - ".weight".length()) : name;
    }

    /** Makes the Java forward's matmul against the tensor {@code name} use {@code lin}. */
    void register(String name, MlxLinear lin) {
        Matrix m = spec.javaMatrices().get(name);
        if (m != null) {
            backend.registerWeight(m, lin);
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
        if (a.dtype() == MlxDtype.UINT32) {
            throw new IllegalArgumentException("tensor " + name + " holds packed quantized codes (uint32), but the "
                    + "model's quantization block leaves it dense");
        }
        return checkShape(name, a, shape);
    }

    private static MlxArray checkShape(String name, MlxArray a, int... shape) {
        if (!Arrays.equals(a.shape(), shape)) {
            throw new IllegalArgumentException("tensor " + name + " has shape " + Arrays.toString(a.shape())
                    + ", expected " + Arrays.toString(shape));
        }
        return a;
    }
}
