package io.tqserve.backend.mlx;

import io.tqserve.backend.DecoderSpec;
import io.tqserve.backend.DeviceDecoder;
import io.tqserve.backend.DeviceKv;
import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxScope;
import io.tqserve.backend.mlx.ffm.MlxStore;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The Llama-family decoder (Llama, Mistral, Qwen2 q/k/v biases, Qwen3 q/k norms) as MLX ops: one MLX graph per
 * forward call, evaluated once, with the weights loaded by MLX from the model's safetensors files. It mirrors
 * {@code model.Transformer} step for step: RMSNorm → q/k/v projections (+bias) → per-head q/k RMSNorm → RoPE
 * (rotate_half pairing) → attention over the bf16 {@link MlxKvCache} → output projection → residual → RMSNorm →
 * SwiGLU MLP → residual; final RMSNorm and LM head on the rows that need logits.
 */
final class MlxDecoder implements DeviceDecoder {

    /** One layer's weights; matrices are stored transposed, (in, out), so that y = x · w. */
    private record Layer(MlxArray attnNorm, MlxArray wq, MlxArray wk, MlxArray wv, MlxArray wo, MlxArray bq,
            MlxArray bk, MlxArray bv, MlxArray qNorm, MlxArray kNorm, MlxArray mlpNorm, MlxArray wGate,
            MlxArray wUp, MlxArray wDown) {
    }

    private final MlxBackend backend;
    private final Mlx mlx;
    private final DecoderSpec spec;
    private final MlxStore store;
    private final MlxDtype dtype;
    private final MlxArray embedding;  // (vocabSize, dim)
    private final MlxArray lmHead;     // (dim, vocabSize), transposed
    private final MlxArray finalNorm;  // (dim)
    private final MlxArray ropePeriods; // (headDim/2) float32, 1 / inverse frequency
    private final Layer[] layers;
    private final float attnScale;

    private MlxDecoder(MlxBackend backend, DecoderSpec spec, MlxStore store, MlxDtype dtype, MlxArray embedding,
            MlxArray lmHead, MlxArray finalNorm, MlxArray ropePeriods, Layer[] layers) {
        this.backend = backend;
        this.mlx = backend.mlx();
        this.spec = spec;
        this.store = store;
        this.dtype = dtype;
        this.embedding = embedding;
        this.lmHead = lmHead;
        this.finalNorm = finalNorm;
        this.ropePeriods = ropePeriods;
        this.layers = layers;
        this.attnScale = (float) (1.0 / Math.sqrt(spec.headDim()));
    }

    /** Loads and converts the weights (evaluated before returning, so the first forward pays no load). */
    static MlxDecoder open(MlxBackend backend, DecoderSpec spec) {
        Mlx mlx = backend.mlx();
        MlxStore store = mlx.newStore();
        backend.lock.lock();
        try (MlxScope s = mlx.newScope()) {
            Map<String, MlxArray> all = new HashMap<>();
            for (Path f : spec.weightFiles()) {
                all.putAll(s.loadSafetensors(f));
            }
            Loader ld = new Loader(s, store, all, spec);
            MlxDtype dtype = backend.computeDtype(ld.raw("model.embed_tokens.weight").dtype());
            ld.dtype = dtype;
            int dim = spec.dim();
            MlxArray embedding = ld.matrix("model.embed_tokens.weight", spec.vocabSize(), dim, false);
            boolean tied = spec.tiedEmbeddings() || !all.containsKey("lm_head.weight");
            MlxArray lmHead = tied ? store.keep(s.transpose(embedding, 1, 0))
                    : ld.matrix("lm_head.weight", spec.vocabSize(), dim, true);
            MlxArray finalNorm = ld.vector("model.norm.weight", dim);
            float[] periods = new float[spec.headDim() / 2];
            for (int i = 0; i < periods.length; i++) {
                periods[i] = (float) (1.0 / spec.ropeInverseFrequencies()[i]);
            }
            MlxArray rope = store.keep(s.fromFloats(periods, periods.length));
            Layer[] layers = new Layer[spec.numLayers()];
            for (int l = 0; l < layers.length; l++) {
                String p = "model.layers." + l + ".";
                layers[l] = new Layer(ld.vector(p + "input_layernorm.weight", dim),
                        ld.matrix(p + "self_attn.q_proj.weight", spec.qDim(), dim, true),
                        ld.matrix(p + "self_attn.k_proj.weight", spec.kvDim(), dim, true),
                        ld.matrix(p + "self_attn.v_proj.weight", spec.kvDim(), dim, true),
                        ld.matrix(p + "self_attn.o_proj.weight", dim, spec.qDim(), true),
                        spec.qkvBias() ? ld.vector(p + "self_attn.q_proj.bias", spec.qDim()) : null,
                        spec.qkvBias() ? ld.vector(p + "self_attn.k_proj.bias", spec.kvDim()) : null,
                        spec.qkvBias() ? ld.vector(p + "self_attn.v_proj.bias", spec.kvDim()) : null,
                        spec.qkNorm() ? ld.vector(p + "self_attn.q_norm.weight", spec.headDim()) : null,
                        spec.qkNorm() ? ld.vector(p + "self_attn.k_norm.weight", spec.headDim()) : null,
                        ld.vector(p + "post_attention_layernorm.weight", dim),
                        ld.matrix(p + "mlp.gate_proj.weight", spec.hiddenDim(), dim, true),
                        ld.matrix(p + "mlp.up_proj.weight", spec.hiddenDim(), dim, true),
                        ld.matrix(p + "mlp.down_proj.weight", dim, spec.hiddenDim(), true));
            }
            ld.kept.add(lmHead);
            ld.kept.add(rope);
            s.eval(ld.kept.toArray(MlxArray[]::new));
            return new MlxDecoder(backend, spec, store, dtype, embedding, lmHead, finalNorm, rope, layers);
        } catch (RuntimeException e) {
            store.close();
            throw e;
        } finally {
            backend.lock.unlock();
        }
    }

    /** Looks tensors up by name, checks their shapes, converts them and keeps them in the store. */
    private static final class Loader {
        final MlxScope s;
        final MlxStore store;
        final Map<String, MlxArray> all;
        final DecoderSpec spec;
        final List<MlxArray> kept = new ArrayList<>();
        MlxDtype dtype;

        Loader(MlxScope s, MlxStore store, Map<String, MlxArray> all, DecoderSpec spec) {
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

        MlxArray matrix(String name, int rows, int cols, boolean transposed) {
            MlxArray a = checked(name, rows, cols);
            MlxArray c = a.dtype() == dtype ? a : s.astype(a, dtype);
            MlxArray k = store.keep(transposed ? s.transpose(c, 1, 0) : c);
            kept.add(k);
            return k;
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

    @Override
    public String describe() {
        return "MLX decoder on " + mlx.device() + ", " + dtype.name().toLowerCase(Locale.ROOT) + " weights and activations";
    }

    @Override
    public void forward(DeviceKv kv, int[] tokens, int from, int count, boolean allLogits, float[] logits,
            int logitsOffset) {
        if (!(kv instanceof MlxKvCache cache) || cache.backend() != backend) {
            throw new IllegalArgumentException("the MLX decoder needs a KV cache made by the same MLX backend");
        }
        int dim = spec.dim();
        int numHeads = spec.numHeads();
        int numKvHeads = spec.numKvHeads();
        int headDim = spec.headDim();
        float eps = spec.rmsNormEps();
        int pos = cache.length();
        backend.lock.lock();
        try (MlxScope s = mlx.newScope()) {
            List<MlxArray> outputs = new ArrayList<>();
            MlxArray x = s.take(embedding, s.fromInts(tokens, from, count, count), 0); // (T, dim)
            for (int l = 0; l < layers.length; l++) {
                Layer w = layers[l];
                MlxArray h = s.rmsNorm(x, w.attnNorm(), eps);
                MlxArray q = heads(s, project(s, h, w.wq(), w.bq()), count, numHeads, headDim);
                MlxArray k = heads(s, project(s, h, w.wk(), w.bk()), count, numKvHeads, headDim);
                MlxArray v = heads(s, project(s, h, w.wv(), w.bv()), count, numKvHeads, headDim);
                if (w.qNorm() != null) {
                    q = s.rmsNorm(q, w.qNorm(), eps);
                    k = s.rmsNorm(k, w.kNorm(), eps);
                }
                q = s.rope(q, headDim, false, 1f, pos, ropePeriods);
                k = s.rope(k, headDim, false, 1f, pos, ropePeriods);
                MlxArray att = cache.attention(s, l, q, k, v, count, dtype); // (1, numHeads, T, headDim)
                outputs.addAll(List.of(cache.arrays(l)));
                att = s.reshape(s.transpose(att, 0, 2, 1, 3), count, numHeads * headDim);
                x = s.add(x, s.matmul(att, w.wo()));
                h = s.rmsNorm(x, w.mlpNorm(), eps);
                MlxArray gate = s.matmul(h, w.wGate());
                MlxArray up = s.matmul(h, w.wUp());
                MlxArray act = s.multiply(s.multiply(gate, s.sigmoid(gate)), up); // SwiGLU: silu(gate) · up
                x = s.add(x, s.matmul(act, w.wDown()));
            }
            MlxArray rows = allLogits ? x : s.slice(x, new int[] {count - 1, 0}, new int[] {count, dim});
            MlxArray out = s.astype(s.matmul(s.rmsNorm(rows, finalNorm, eps), lmHead), MlxDtype.FLOAT32);
            outputs.add(0, out);
            s.eval(outputs.toArray(MlxArray[]::new));
            s.copyFloats(out, logits, logitsOffset);
        } finally {
            backend.lock.unlock();
        }
    }

    /** x · w (+ bias). */
    private static MlxArray project(MlxScope s, MlxArray x, MlxArray w, MlxArray bias) {
        MlxArray y = s.matmul(x, w);
        return bias == null ? y : s.add(y, bias);
    }

    /** (T, heads·headDim) → (1, heads, T, headDim). */
    private static MlxArray heads(MlxScope s, MlxArray x, int count, int heads, int headDim) {
        return s.transpose(s.reshape(x, 1, count, heads, headDim), 0, 2, 1, 3);
    }

    @Override
    public void close() {
        backend.lock.lock();
        try {
            store.close();
        } finally {
            backend.lock.unlock();
        }
    }
}
