package io.tqserve.backend.mlx;

import io.tqserve.backend.DecoderSpec;
import io.tqserve.backend.DeviceChunk;
import io.tqserve.backend.DeviceDecoder;
import io.tqserve.backend.DeviceSample;
import io.tqserve.backend.DeviceSampler;
import io.tqserve.backend.SamplingSpec;
import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxScope;
import io.tqserve.backend.mlx.ffm.MlxStore;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;

/**
 * The Llama-family decoder (Llama, Mistral, Qwen2 q/k/v biases, Qwen3 q/k norms) as MLX ops, with the weights
 * loaded once by MLX from the model's safetensors files. A forward call takes the chunks of several sequences
 * and builds one graph, evaluated once: RMSNorm, the q/k/v projections, the output projection and the SwiGLU MLP
 * run over all rows together (each weight read once per step). The decode rows of bf16 caches attend together
 * ({@link MlxDecodeBatch}: RoPE at per-row positions, one scatter and one gather of the shared {@link MlxKvPool},
 * one masked attention call per layer), so a decode step's graph has the same ops whatever its batch; a prefill
 * chunk or a TurboQuant cache ({@link MlxTurboKvCache}) attends per chunk inside the same graph. The final RMSNorm
 * and LM head run on the rows that need logits, and chunks with a device sampler are sampled in the graph too
 * (the plain-greedy ones with one argmax), so only their token ids (and requested logprobs) are copied to Java.
 */
final class MlxDecoder implements DeviceDecoder {

    /** One layer's weights; each projection dense or quantized ({@link MlxLinear}), y = x · wᵀ. */
    private record Layer(MlxArray attnNorm, MlxLinear wq, MlxLinear wk, MlxLinear wv, MlxLinear wo, MlxArray bq,
            MlxArray bk, MlxArray bv, MlxArray qNorm, MlxArray kNorm, MlxArray mlpNorm, MlxLinear wGate,
            MlxLinear wUp, MlxLinear wDown) {
    }

    private final MlxBackend backend;
    private final Mlx mlx;
    private final DecoderSpec spec;
    private final MlxStore store;
    private final MlxDtype dtype;
    private final MlxLinear embedding; // (vocabSize, dim), looked up by token id
    private final MlxLinear lmHead;    // (vocabSize, dim): the embedding itself when tied
    private final MlxArray finalNorm;  // (dim)
    private final MlxArray ropePeriods; // (headDim/2) float32, 1 / inverse frequency
    private final Layer[] layers;
    private final List<io.tqserve.backend.Matrix> registered;
    private final float attnScale;
    private final String weightsDescription;

    private MlxDecoder(MlxBackend backend, DecoderSpec spec, MlxStore store, MlxDtype dtype, MlxLinear embedding,
            MlxLinear lmHead, MlxArray finalNorm, MlxArray ropePeriods, Layer[] layers,
            List<io.tqserve.backend.Matrix> registered) {
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
        this.registered = registered;
        this.attnScale = (float) (1.0 / Math.sqrt(spec.headDim()));
        List<MlxLinear> all = new ArrayList<>(List.of(embedding));
        if (lmHead != embedding) {
            all.add(lmHead);
        }
        for (Layer l : layers) {
            all.addAll(List.of(l.wq(), l.wk(), l.wv(), l.wo(), l.wGate(), l.wUp(), l.wDown()));
        }
        this.weightsDescription = describeWeights(dtype, all);
    }

    /** "bfloat16 weights and activations", or for quantized weights their widths and how many layers use them. */
    private static String describeWeights(MlxDtype dtype, List<MlxLinear> all) {
        String d = dtype.name().toLowerCase(java.util.Locale.ROOT);
        List<MlxLinear> q = all.stream().filter(MlxLinear::quantized).toList();
        if (q.isEmpty()) {
            return d + " weights and activations";
        }
        String widths = q.stream().map(l -> l.bits() + "-bit group " + l.groupSize()).distinct().sorted()
                .collect(java.util.stream.Collectors.joining(", "));
        return "group-affine quantized weights (" + widths + "; " + q.size() + " of " + all.size()
                + " linear layers and embeddings), " + d + " activations";
    }

    /** Loads (and, for {@code float32}, converts) the weights, evaluated before returning. */
    static MlxDecoder open(MlxBackend backend, DecoderSpec spec) {
        MlxStore store = backend.mlx().newStore();
        return backend.device().call(s -> load(backend, spec, store, s));
    }

    private static MlxDecoder load(MlxBackend backend, DecoderSpec spec, MlxStore store, MlxScope s) {
        MlxWeights ld = null;
        try {
            Map<String, MlxArray> all = new HashMap<>();
            for (Path f : spec.weightFiles()) {
                all.putAll(s.loadSafetensors(f));
            }
            ld = new MlxWeights(backend, s, store, all, spec);
            MlxDtype dtype = backend.computeDtype(ld.storedFloatType("model.embed_tokens.weight"));
            ld.dtype = dtype;
            int dim = spec.dim();
            boolean tied = spec.tiedEmbeddings() || !ld.has("lm_head.weight");
            MlxLinear embedding = ld.linear("model.embed_tokens.weight", spec.vocabSize(), dim, tied);
            MlxLinear lmHead = tied ? embedding : ld.linear("lm_head.weight", spec.vocabSize(), dim, true);
            MlxArray finalNorm = ld.vector("model.norm.weight", dim);
            float[] periods = new float[spec.headDim() / 2];
            for (int i = 0; i < periods.length; i++) {
                periods[i] = (float) (1.0 / spec.ropeInverseFrequencies()[i]);
            }
            MlxArray rope = store.keep(s.fromFloats(periods, periods.length));
            ld.kept.add(rope);
            Layer[] layers = new Layer[spec.numLayers()];
            for (int l = 0; l < layers.length; l++) {
                String p = "model.layers." + l + ".";
                layers[l] = new Layer(ld.vector(p + "input_layernorm.weight", dim),
                        ld.linear(p + "self_attn.q_proj.weight", spec.qDim(), dim, true),
                        ld.linear(p + "self_attn.k_proj.weight", spec.kvDim(), dim, true),
                        ld.linear(p + "self_attn.v_proj.weight", spec.kvDim(), dim, true),
                        ld.linear(p + "self_attn.o_proj.weight", dim, spec.qDim(), true),
                        spec.qkvBias() ? ld.vector(p + "self_attn.q_proj.bias", spec.qDim()) : null,
                        spec.qkvBias() ? ld.vector(p + "self_attn.k_proj.bias", spec.kvDim()) : null,
                        spec.qkvBias() ? ld.vector(p + "self_attn.v_proj.bias", spec.kvDim()) : null,
                        spec.qkNorm() ? ld.vector(p + "self_attn.q_norm.weight", spec.headDim()) : null,
                        spec.qkNorm() ? ld.vector(p + "self_attn.k_norm.weight", spec.headDim()) : null,
                        ld.vector(p + "post_attention_layernorm.weight", dim),
                        ld.linear(p + "mlp.gate_proj.weight", spec.hiddenDim(), dim, true),
                        ld.linear(p + "mlp.up_proj.weight", spec.hiddenDim(), dim, true),
                        ld.linear(p + "mlp.down_proj.weight", dim, spec.hiddenDim(), true));
            }
            s.eval(ld.kept.toArray(MlxArray[]::new));
            return new MlxDecoder(backend, spec, store, dtype, embedding, lmHead, finalNorm, rope, layers,
                    ld.registered);
        } catch (RuntimeException e) {
            if (ld != null) {
                backend.unregisterWeights(ld.registered);
            }
            store.close();
            throw e;
        }
    }

    @Override
    public String describe() {
        return "MLX decoder on " + mlx.device() + ", " + weightsDescription;
    }

    @Override
    public DeviceSampler newSampler(SamplingSpec spec) {
        return new MlxSampler(backend, spec, this.spec.vocabSize());
    }

    @Override
    public void forward(List<DeviceChunk> chunks, float[] logits, int logitsOffset, DeviceSample[] samples) {
        try (MlxPendingStep step = submit(chunks)) {
            float[] rows = step.read(samples);
            System.arraycopy(rows, 0, logits, logitsOffset, rows.length);
        }
    }

    @Override
    public MlxPendingStep submit(List<DeviceChunk> chunks) {
        for (DeviceChunk ch : chunks) {
            if (!(ch.kv() instanceof MlxSequenceKv cache) || cache.backend() != backend) {
                throw new IllegalArgumentException("the MLX decoder needs KV caches made by the same MLX backend");
            }
            if (ch.sampler() != null && (!(ch.sampler() instanceof MlxSampler ms) || ms.backend() != backend)) {
                throw new IllegalArgumentException("the MLX decoder needs samplers made by the same MLX backend");
            }
            if (ch.input() != null && !(ch.input() instanceof MlxPendingStep.Token)) {
                throw new IllegalArgumentException("a device token of another backend");
            }
        }
        return backend.device().held(() -> queue(chunks));
    }

    /** Builds the step's graph in a new scope, which the returned step owns, and queues it. */
    private MlxPendingStep queue(List<DeviceChunk> chunks) {
        MlxScope s = mlx.newScope();
        try {
            List<MlxArray> outputs = new ArrayList<>();
            MlxArray ids = inputIds(s, chunks);
            MlxArray e = embedding.rows(s, ids, dtype == MlxDtype.FLOAT32);
            MlxArray x = e.dtype() == MlxDtype.FLOAT32 ? e : s.astype(e, MlxDtype.FLOAT32); // (N, dim) float32
            Attention plan = Attention.plan(s, chunks, attnScale);
            for (int l = 0; l < layers.length; l++) {
                x = layer(s, l, x, chunks, plan, outputs);
            }
            int[] starts = new int[chunks.size()];
            for (int i = 1; i < starts.length; i++) {
                starts[i] = starts[i - 1] + chunks.get(i - 1).count();
            }
            IntFunction<MlxArray> input = i -> s.slice(ids, new int[] {starts[i]},
                    new int[] {starts[i] + chunks.get(i).count()});
            return MlxPendingStep.queue(backend, s, spec, chunks, input,
                    lmHead.apply(s, norm(s, lastRows(s, x, chunks), finalNorm)), outputs);
        } catch (RuntimeException | Error e) {
            for (DeviceChunk ch : chunks) {
                if (ch.sampler() instanceof MlxSampler ms) {
                    ms.abort();
                }
            }
            s.close();
            throw e;
        }
    }

    /**
     * The step's input ids (N) int32: the tokens a previous step sampled on the device (its array itself when this
     * step feeds all of them in order, as a decode step of the same sequences does, else gathered with one take
     * when they come from one step) or the chunks' token ids from Java (one array for all).
     */
    private static MlxArray inputIds(MlxScope s, List<DeviceChunk> chunks) {
        if (chunks.stream().allMatch(ch -> ch.input() == null)) {
            int n = chunks.stream().mapToInt(DeviceChunk::count).sum();
            int[] ids = new int[n];
            int at = 0;
            for (DeviceChunk ch : chunks) {
                System.arraycopy(ch.tokens(), ch.from(), ids, at, ch.count());
                at += ch.count();
            }
            return s.fromInts(ids, 0, n, n);
        }
        MlxArray source = null;
        boolean oneSource = true;
        boolean inOrder = true;
        for (int i = 0; i < chunks.size() && oneSource; i++) {
            if (chunks.get(i).input() instanceof MlxPendingStep.Token t && chunks.get(i).count() == 1) {
                source = source == null ? t.array() : source;
                oneSource = t.array() == source;
                inOrder &= t.index() == i;
            } else {
                oneSource = false;
            }
        }
        if (oneSource && inOrder && source.shape()[0] == chunks.size()) {
            return source;
        }
        if (oneSource) {
            int[] idx = chunks.stream().mapToInt(ch -> ((MlxPendingStep.Token) ch.input()).index()).toArray();
            return s.take(source, s.fromInts(idx, 0, idx.length, idx.length), 0);
        }
        MlxArray[] parts = new MlxArray[chunks.size()];
        for (int i = 0; i < parts.length; i++) {
            DeviceChunk ch = chunks.get(i);
            parts[i] = ch.input() instanceof MlxPendingStep.Token t ? t.row(s)
                    : s.fromInts(ch.tokens(), ch.from(), ch.count(), ch.count());
        }
        return parts.length == 1 ? parts[0] : s.concatenate(0, parts);
    }

    /**
     * How a step's attention runs: the decode rows of bf16 caches of one pool together ({@link MlxDecodeBatch}),
     * every other chunk (a prefill, a TurboQuant cache) against its own cache. A one-token chunk on an empty cache
     * is a prefill: it attends over its own full-precision k, v, as the KV contract says.
     *
     * @param batch    the decode batch, or null
     * @param inBatch  per chunk, its row in the batch, or -1
     * @param rows     the batch's rows of x, or null when they are all rows in order
     */
    private record Attention(MlxDecodeBatch batch, int[] inBatch, MlxArray rows) {
        static Attention plan(MlxScope s, List<DeviceChunk> chunks, float scale) {
            int[] inBatch = new int[chunks.size()];
            java.util.Arrays.fill(inBatch, -1);
            List<MlxKvCache> caches = new ArrayList<>();
            List<Integer> rows = new ArrayList<>();
            MlxKvPool pool = null;
            int row = 0;
            for (int i = 0; i < chunks.size(); i++) {
                DeviceChunk ch = chunks.get(i);
                // a decode row: one token after others (a fresh one-token prefill attends over its own k, v)
                if (ch.kv() instanceof MlxKvCache c && ch.count() == 1 && c.length() > 0
                        && (pool == null || c.pool() == pool)) {
                    pool = c.pool();
                    inBatch[i] = caches.size();
                    caches.add(c);
                    rows.add(row);
                }
                row += ch.count();
            }
            if (caches.isEmpty()) {
                return new Attention(null, inBatch, null);
            }
            MlxDecodeBatch batch = MlxDecodeBatch.of(s, pool, caches, scale);
            if (rows.size() == row) {
                return new Attention(batch, inBatch, null);
            }
            int[] r = rows.stream().mapToInt(Integer::intValue).toArray();
            return new Attention(batch, inBatch, s.fromInts(r, 0, r.length, r.length));
        }
    }

    /** The rows that need logits: the last of each chunk, or all of a chunk with allLogits. */
    private static MlxArray lastRows(MlxScope s, MlxArray x, List<DeviceChunk> chunks) {
        List<Integer> rowIds = new ArrayList<>();
        int row = 0;
        for (DeviceChunk ch : chunks) {
            for (int i = ch.allLogits() ? 0 : ch.count() - 1; i < ch.count(); i++) {
                rowIds.add(row + i);
            }
            row += ch.count();
        }
        if (rowIds.size() == row) {
            return x;
        }
        int[] sel = rowIds.stream().mapToInt(Integer::intValue).toArray();
        return s.take(x, s.fromInts(sel, 0, sel.length, sel.length), 0);
    }

    /** One decoder layer over all rows; the decode rows' attention batched, the other chunks' per chunk. */
    private MlxArray layer(MlxScope s, int l, MlxArray x, List<DeviceChunk> chunks, Attention plan,
            List<MlxArray> outputs) {
        Layer w = layers[l];
        float eps = spec.rmsNormEps();
        int n = x.shape()[0];
        int headDim = spec.headDim();
        MlxArray h = norm(s, x, w.attnNorm());
        MlxArray q = s.reshape(project(s, h, w.wq(), w.bq()), n, spec.numHeads(), headDim);
        // K/V that a TurboQuant cache encodes are projected in float32 in every mode (see encodesKv)
        MlxArray hkv = dtype != MlxDtype.FLOAT32 && encodesKv(chunks) ? s.rmsNorm(x, w.attnNorm(), eps) : h;
        MlxArray k = s.reshape(project(s, hkv, w.wk(), w.bk()), n, spec.numKvHeads(), headDim);
        MlxArray v = s.reshape(project(s, hkv, w.wv(), w.bv()), n, spec.numKvHeads(), headDim);
        if (w.qNorm() != null) {
            q = s.rmsNorm(q, w.qNorm(), eps);
            k = s.rmsNorm(k, w.kNorm(), eps);
        }
        MlxArray batched = null; // (B, qDim)
        if (plan.batch() != null) {
            batched = plan.rows() == null ? plan.batch().attend(s, l, q, k, v, ropePeriods, dtype)
                    : plan.batch().attend(s, l, s.take(q, plan.rows(), 0), s.take(k, plan.rows(), 0),
                            s.take(v, plan.rows(), 0), ropePeriods, dtype);
            outputs.addAll(List.of(plan.batch().arrays(l)));
            if (plan.rows() == null) {
                return mlp(s, w, x, batched);
            }
        }
        List<MlxArray> parts = new ArrayList<>(chunks.size());
        int row = 0;
        for (int i = 0; i < chunks.size(); i++) {
            DeviceChunk ch = chunks.get(i);
            int c = ch.count();
            if (plan.inBatch()[i] >= 0) {
                int j = plan.inBatch()[i];
                parts.add(s.slice(batched, new int[] {j, 0}, new int[] {j + 1, spec.qDim()}));
                row += c;
                continue;
            }
            MlxSequenceKv cache = (MlxSequenceKv) ch.kv();
            int pos = cache.length();
            MlxArray qc = s.rope(heads(s, rows(s, q, row, c)), headDim, false, 1f, pos, ropePeriods);
            MlxArray kc = s.rope(heads(s, rows(s, k, row, c)), headDim, false, 1f, pos, ropePeriods);
            MlxArray vc = heads(s, rows(s, v, row, c));
            MlxArray att = cache.attention(s, l, qc, kc, vc, c, dtype); // (1, numHeads, c, headDim)
            outputs.addAll(List.of(cache.arrays(l)));
            parts.add(s.reshape(s.transpose(att, 0, 2, 1, 3), c, spec.qDim()));
            row += c;
        }
        MlxArray att = parts.size() == 1 ? parts.get(0) : s.concatenate(0, parts.toArray(MlxArray[]::new));
        return mlp(s, w, x, att);
    }

    /** The rest of a layer after attention: output projection, residual, SwiGLU MLP, residual. */
    private MlxArray mlp(MlxScope s, Layer w, MlxArray x, MlxArray att) {
        x = s.add(x, w.wo().apply(s, att));
        MlxArray h = norm(s, x, w.mlpNorm());
        MlxArray gate = w.wGate().apply(s, h);
        MlxArray up = w.wUp().apply(s, h);
        MlxArray act = s.multiply(s.multiply(gate, s.sigmoid(gate)), up); // SwiGLU: silu(gate) · up
        return s.add(x, w.wDown().apply(s, act));
    }

    /**
     * Whether the step's K/V rows go to TurboQuant caches. Those are projected from the float32 normed residual
     * (the weights widen exactly), so the codec quantizes the float32 projection, as on the CPU backend and in
     * {@code float32} mode: rounding K/V to bf16 first moves values across the quantizer's decision boundaries (one
     * 8-bit key code in seven by a step, ~0.3 % of the 3-bit value codes on the reference prompts), which roughly
     * doubles {@code turbo:k8v3}'s error against float32 and changes greedy continuations. Only the two K/V
     * projections pay it (a few percent of a GQA model's weight reads); the bf16 lane's caches store bf16 anyway.
     */
    private static boolean encodesKv(List<DeviceChunk> chunks) {
        for (DeviceChunk ch : chunks) {
            if (ch.kv() instanceof MlxTurboKvCache) {
                return true;
            }
        }
        return false;
    }

    /**
     * RMSNorm of the float32 residual stream, in the compute dtype: what a weight multiplies is in the compute
     * dtype (the matmuls read the weights as stored), while the residual sums stay float32, as in the Java forward,
     * so native mode loses only the roundings of the sub-blocks' inputs and outputs, not of the running sum.
     */
    private MlxArray norm(MlxScope s, MlxArray x, MlxArray weight) {
        MlxArray h = s.rmsNorm(x, weight, spec.rmsNormEps());
        return h.dtype() == dtype ? h : s.astype(h, dtype);
    }

    /** Rows [from, from+count) of a (N, heads, headDim) array. */
    private static MlxArray rows(MlxScope s, MlxArray a, int from, int count) {
        int[] shape = a.shape();
        return s.slice(a, new int[] {from, 0, 0}, new int[] {from + count, shape[1], shape[2]});
    }

    /** x · wᵀ (+ bias). */
    private static MlxArray project(MlxScope s, MlxArray x, MlxLinear w, MlxArray bias) {
        MlxArray y = w.apply(s, x);
        return bias == null ? y : s.add(y, bias);
    }

    /** (T, heads, headDim) → (1, heads, T, headDim). */
    private static MlxArray heads(MlxScope s, MlxArray x) {
        int[] shape = x.shape();
        return s.transpose(s.reshape(x, 1, shape[0], shape[1], shape[2]), 0, 2, 1, 3);
    }

    @Override
    public void close() {
        backend.device().heldRun(() -> {
            backend.unregisterWeights(registered);
            store.close();
        });
    }
}
