package io.tqserve.model;

import io.tqserve.backend.ComputeBackend;
import io.tqserve.backend.DecoderSpec;
import io.tqserve.backend.DeviceChunk;
import io.tqserve.backend.DeviceDecoder;
import io.tqserve.backend.DeviceSample;
import io.tqserve.backend.DeviceSampler;
import io.tqserve.backend.DeviceToken;
import io.tqserve.backend.PendingStep;
import io.tqserve.backend.Matrix;
import io.tqserve.backend.SamplingSpec;
import io.tqserve.backend.Kernels;
import io.tqserve.kv.AttentionShape;
import io.tqserve.kv.AttentionTasks;
import io.tqserve.kv.DeviceKvCache;
import io.tqserve.kv.KvCache;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The Llama-family decoder forward pass (Llama, Mistral, Qwen2 with q/k/v biases, Qwen3 with q/k norms).
 * One call runs a batch of chunks — each a run of new tokens of one sequence with its own KV cache — as one
 * matrix of rows: every weight matrix is read once per call for all rows (prefill of a whole prompt, or one
 * decode step of many sequences). Attention runs per chunk against that chunk's cache, the tasks of all chunks in
 * one hand-off to the kernel threads per layer.
 *
 * <p>On a backend with a device decoder (MLX), a batch whose caches all live on the device runs the whole forward
 * there instead, as one device graph (decode chunks made with {@link Chunk#sampled} are sampled in it, and
 * {@link #submit} queues such a step without waiting for it); other caches (e.g. TurboQuant, held in Java memory)
 * take the Java path, whose matmuls still go to the backend.
 */
public final class Transformer implements AutoCloseable {

    /**
     * New tokens of one sequence.
     *
     * @param cache     the sequence's KV cache; positions continue at {@code cache.length()}
     * @param tokens    token ids, the chunk is {@code tokens[from .. from+count)}
     * @param allLogits logits for every row (teacher forcing, NLL) instead of the last row only
     */
    public record Chunk(KvCache cache, int[] tokens, int from, int count, boolean allLogits, DeviceSampler sampler,
            DeviceToken input) {
        public Chunk {
            if (input != null && (count != 1 || sampler == null)) {
                throw new IllegalArgumentException("a chunk fed a device token is a decode step sampled on the device");
            }
            if (count < 1 || from < 0 || from + count > tokens.length) {
                throw new IllegalArgumentException("empty or out-of-range chunk");
            }
            if (sampler != null && (allLogits || count != 1)) {
                throw new IllegalArgumentException("a chunk sampled on the device is one decode token");
            }
        }

        public Chunk(KvCache cache, int[] tokens, int from, int count, boolean allLogits) {
            this(cache, tokens, from, count, allLogits, null, null);
        }

        public static Chunk of(KvCache cache, int[] tokens) {
            return new Chunk(cache, tokens, 0, tokens.length, false);
        }

        /**
         * A decode step of {@code token} whose next token is sampled by {@code sampler} on the device when the pass
         * runs there (see {@link Transformer#deviceSample}); else its logits are computed as for any chunk.
         */
        public static Chunk sampled(KvCache cache, int token, DeviceSampler sampler) {
            return new Chunk(cache, new int[] {token}, 0, 1, false, sampler, null);
        }

        /** A decode step fed the token an earlier, not yet read, device step sampled ({@link #submit}). */
        public static Chunk sampled(KvCache cache, DeviceToken input, DeviceSampler sampler) {
            return new Chunk(cache, new int[] {0}, 0, 1, false, sampler, input);
        }

        int logitRows() {
            return allLogits ? count : 1;
        }
    }

    private final ModelConfig c;
    private final ModelWeights w;
    private final ComputeBackend backend;
    private final Kernels kernels;
    private final float[] ropeCos; // (maxPositions, headDim/2)
    private final float[] ropeSin; // (maxPositions, headDim/2)
    private final DeviceDecoder device; // null: the Java forward only

    public Transformer(ModelConfig config, ModelWeights weights, ComputeBackend backend) {
        this(config, weights, backend, List.of());
    }

    /**
     * @param weightFiles the safetensors files of {@code weights}; when given, a backend with a device decoder
     *                    loads them itself (empty: the Java forward only)
     */
    public Transformer(ModelConfig config, ModelWeights weights, ComputeBackend backend, List<Path> weightFiles) {
        this.c = config;
        this.w = weights;
        this.backend = backend;
        this.kernels = backend.kernels();
        int half = c.headDim() / 2;
        float[] inv = c.ropeScaling().inverseFrequencies(c.ropeTheta(), c.headDim());
        this.ropeCos = new float[c.maxPositions() * half];
        this.ropeSin = new float[c.maxPositions() * half];
        for (int p = 0; p < c.maxPositions(); p++) {
            for (int i = 0; i < half; i++) {
                float angle = p * inv[i]; // float32 product, as Hugging Face computes freqs
                ropeCos[p * half + i] = (float) Math.cos(angle);
                ropeSin[p * half + i] = (float) Math.sin(angle);
            }
        }
        this.device = weightFiles.isEmpty() ? null : backend.openDecoder(decoderSpec(weightFiles)).orElse(null);
        if (device == null) {
            List<Matrix> matrices = new java.util.ArrayList<>();
            for (ModelWeights.Layer lw : w.layers()) {
                matrices.addAll(List.of(lw.wq(), lw.wk(), lw.wv(), lw.wo(), lw.wGate(), lw.wUp(), lw.wDown()));
            }
            matrices.add(w.lmHead());
            backend.prepare(matrices);
        }
    }

    private DecoderSpec decoderSpec(List<Path> weightFiles) {
        ModelWeights.Layer first = w.layers().get(0);
        Map<String, Matrix> named = new HashMap<>();
        named.put("model.embed_tokens.weight", w.embedding());
        if (w.lmHead() != w.embedding()) {
            named.put("lm_head.weight", w.lmHead());
        }
        for (int l = 0; l < w.layers().size(); l++) {
            ModelWeights.Layer lw = w.layers().get(l);
            String p = "model.layers." + l + ".";
            named.put(p + "self_attn.q_proj.weight", lw.wq());
            named.put(p + "self_attn.k_proj.weight", lw.wk());
            named.put(p + "self_attn.v_proj.weight", lw.wv());
            named.put(p + "self_attn.o_proj.weight", lw.wo());
            named.put(p + "mlp.gate_proj.weight", lw.wGate());
            named.put(p + "mlp.up_proj.weight", lw.wUp());
            named.put(p + "mlp.down_proj.weight", lw.wDown());
        }
        return new DecoderSpec(c.dim(), c.hiddenDim(), c.numLayers(), c.numHeads(), c.numKvHeads(), c.headDim(),
                c.vocabSize(), c.maxPositions(), c.rmsNormEps(),
                c.ropeScaling().inverseFrequencies(c.ropeTheta(), c.headDim()), first.bq() != null,
                first.qNorm() != null, w.lmHead() == w.embedding(), weightFiles, named);
    }

    /**
     * A sampler whose state lives on the device decoder, or empty when the forward runs in Java (the CPU backend).
     * Chunks made with {@link Chunk#sampled} then have their next token sampled in the pass, and only the token
     * (and requested logprobs) reaches Java: {@link ForwardState#sample}.
     */
    public Optional<DeviceSampler> deviceSampler(SamplingSpec spec) {
        return device == null ? Optional.empty() : Optional.of(device.newSampler(spec));
    }

    /** Whether a pass over these caches runs on the device decoder (else the Java forward). */
    public boolean runsOnDevice(KvCache cache) {
        return device != null && cache instanceof DeviceKvCache;
    }

    /** The device decoder's description, or null when the forward runs in Java. */
    public String deviceDescription() {
        return device == null ? null : device.describe();
    }

    public ModelConfig config() {
        return c;
    }

    public ComputeBackend backend() {
        return backend;
    }

    public AttentionShape attentionShape() {
        return new AttentionShape(c.numLayers(), c.numHeads(), c.numKvHeads(), c.headDim());
    }

    /**
     * gate = silu(gate) · up over the first {@code total} elements, split over the kernel threads: with one exp per
     * element it is the largest elementwise step of a batched forward. Elementwise, so the split changes no result.
     */
    private void swiglu(ForwardState state, int total) {
        int parts = Math.min(backend.threads(), total / 2048);
        if (parts <= 1) {
            kernels.swiglu(state.gate, 0, state.up, 0, total);
            return;
        }
        backend.parallelFor(parts, p -> {
            int from = (int) ((long) total * p / parts);
            int to = (int) ((long) total * (p + 1) / parts);
            kernels.swiglu(state.gate, from, state.up, from, to - from);
        });
    }

    /**
     * Runs the chunks and commits their tokens to their caches. Logits land in {@code state.logits()}: one row
     * per chunk (its last token), or {@code count} rows for a chunk with {@code allLogits}, in chunk order.
     */
    public float[] forward(ForwardState state, List<Chunk> chunks) {
        int n = 0;
        int logitRows = 0;
        for (Chunk ch : chunks) {
            if (ch.cache().length() + ch.count() > c.maxPositions()) {
                throw new IllegalArgumentException("sequence of " + (ch.cache().length() + ch.count())
                        + " tokens exceeds the model context of " + c.maxPositions());
            }
            n += ch.count();
            logitRows += ch.logitRows();
        }
        state.ensure(n, logitRows);
        state.ensureSamples(chunks.size());
        try (ComputeBackend.DeviceLock held = backend.lockDevice()) { // once per pass: the lanes share the device
            if (device != null && chunks.stream().allMatch(ch -> ch.cache() instanceof DeviceKvCache)) {
                return forwardOnDevice(state, chunks);
            }
            return forwardJava(state, chunks, n, logitRows);
        }
    }

    private float[] forwardJava(ForwardState state, List<Chunk> chunks, int n, int logitRows) {
        java.util.Arrays.fill(state.samples, 0, chunks.size(), null); // sampled chunks get their logits in Java
        int dim = c.dim();
        embed(state, chunks);
        for (int layer = 0; layer < c.numLayers(); layer++) {
            ModelWeights.Layer lw = w.layers().get(layer);
            for (int r = 0; r < n; r++) {
                kernels.rmsnorm(state.xb, r * dim, state.x, r * dim, lw.attnNorm(), dim, c.rmsNormEps());
            }
            backend.matmuls(new Matrix[] {lw.wq(), lw.wk(), lw.wv()}, state.xb, n,
                    new float[][] {state.q, state.k, state.v});
            if (lw.bq() != null) {
                addBias(state.q, lw.bq(), n);
                addBias(state.k, lw.bk(), n);
                addBias(state.v, lw.bv(), n);
            }
            if (lw.qNorm() != null) {
                headNorm(state.q, n, c.numHeads(), lw.qNorm());
                headNorm(state.k, n, c.numKvHeads(), lw.kNorm());
            }
            rope(state, chunks);
            attend(state, chunks, layer);
            backend.matmul(lw.wo(), state.att, n, state.tmp);
            kernels.add(state.x, 0, state.tmp, 0, n * dim);
            for (int r = 0; r < n; r++) {
                kernels.rmsnorm(state.xb, r * dim, state.x, r * dim, lw.mlpNorm(), dim, c.rmsNormEps());
            }
            backend.matmuls(new Matrix[] {lw.wGate(), lw.wUp()}, state.xb, n, new float[][] {state.gate, state.up});
            swiglu(state, n * c.hiddenDim());
            backend.matmul(lw.wDown(), state.gate, n, state.tmp);
            kernels.add(state.x, 0, state.tmp, 0, n * dim);
        }
        int row = 0;
        int out = 0;
        for (Chunk ch : chunks) {
            int first = ch.allLogits() ? 0 : ch.count() - 1;
            for (int r = first; r < ch.count(); r++) {
                kernels.rmsnorm(state.normed, out * dim, state.x, (row + r) * dim, w.finalNorm(), dim, c.rmsNormEps());
                out++;
            }
            row += ch.count();
        }
        backend.matmul(w.lmHead(), state.normed, logitRows, state.logits);
        for (Chunk ch : chunks) {
            ch.cache().advance(ch.count());
        }
        return state.logits;
    }

    /**
     * All chunks as one device graph, evaluated once; logits in chunk order, as the Java path lays them out, except
     * for chunks sampled on the device, whose tokens land in {@link ForwardState#sample}.
     */
    private float[] forwardOnDevice(ForwardState state, List<Chunk> chunks) {
        List<DeviceChunk> dc = new java.util.ArrayList<>(chunks.size());
        for (Chunk ch : chunks) {
            for (int i = 0; i < ch.count(); i++) {
                checkToken(ch.tokens()[ch.from() + i]);
            }
            dc.add(deviceChunk(ch));
        }
        device.forward(dc, state.logits, 0, state.samples);
        for (Chunk ch : chunks) {
            ch.cache().advance(ch.count());
        }
        return state.logits;
    }

    private DeviceChunk deviceChunk(Chunk ch) {
        return new DeviceChunk(((DeviceKvCache) ch.cache()).device(), ch.tokens(), ch.from(), ch.count(),
                ch.allLogits(), ch.sampler(), ch.input());
    }

    /**
     * Queues the chunks as one device step and returns without waiting for it (the chunks' tokens are committed to
     * their caches at once, so the next step can be queued before this one is read); every cache must be a device
     * cache ({@link #runsOnDevice}). The caller reads the step ({@link PendingStep#read}: the logits of chunks
     * without a sampler, in chunk order, and the sampled tokens) or closes it.
     */
    public PendingStep submit(List<Chunk> chunks) {
        if (device == null || !chunks.stream().allMatch(ch -> ch.cache() instanceof DeviceKvCache)) {
            throw new IllegalStateException("only steps whose caches all live on the device can be queued");
        }
        List<DeviceChunk> dc = new java.util.ArrayList<>(chunks.size());
        for (Chunk ch : chunks) {
            if (ch.cache().length() + ch.count() > c.maxPositions()) {
                throw new IllegalArgumentException("sequence of " + (ch.cache().length() + ch.count())
                        + " tokens exceeds the model context of " + c.maxPositions());
            }
            if (ch.input() == null) {
                for (int i = 0; i < ch.count(); i++) {
                    checkToken(ch.tokens()[ch.from() + i]);
                }
            }
            dc.add(deviceChunk(ch));
        }
        PendingStep step;
        try (ComputeBackend.DeviceLock held = backend.lockDevice()) {
            step = device.submit(dc);
        }
        for (Chunk ch : chunks) {
            ch.cache().advance(ch.count());
        }
        return step;
    }

    /** Whether this transformer has a device decoder (then {@link #submit} can queue steps on it). */
    public boolean hasDevice() {
        return device != null;
    }

    private void checkToken(int token) {
        if (token < 0 || token >= c.vocabSize()) {
            throw new IllegalArgumentException("token id " + token + " outside the vocabulary of " + c.vocabSize());
        }
    }

    /**
     * Every chunk's attention of one layer: each cache stores its chunk's K/V and stages its attention as tasks
     * ({@link KvCache#stage}), then the tasks of all chunks run in one hand-off to the kernel threads, the largest
     * first (one hand-off per chunk left each with too little work in a step of many sequences). Which thread runs a
     * task changes no result.
     */
    private void attend(ForwardState state, List<Chunk> chunks, int layer) {
        AttentionTasks[] parts = new AttentionTasks[chunks.size()];
        int staged = 0;
        int row = 0;
        for (Chunk ch : chunks) {
            AttentionTasks t = ch.cache().stage(layer, row, ch.count(), state.q, state.k, state.v, state.att);
            row += ch.count();
            if (t.count() > 0) {
                parts[staged++] = t;
            }
        }
        java.util.Arrays.sort(parts, 0, staged, Comparator.comparingLong(AttentionTasks::work).reversed());
        int[] start = new int[staged + 1];
        for (int p = 0; p < staged; p++) {
            start[p + 1] = start[p] + parts[p].count();
        }
        int ends = staged + 1;
        backend.parallelFor(start[staged], task -> {
            int at = java.util.Arrays.binarySearch(start, 0, ends, task);
            int p = at >= 0 ? at : -at - 2; // the part whose tasks start at or before task (starts strictly rise)
            parts[p].body().accept(task - start[p]);
        });
    }

    private void embed(ForwardState s, List<Chunk> chunks) {
        int row = 0;
        for (Chunk ch : chunks) {
            for (int i = 0; i < ch.count(); i++) {
                int token = ch.tokens()[ch.from() + i];
                checkToken(token);
                kernels.decodeRow(w.embedding(), token, s.x, (row + i) * c.dim());
            }
            row += ch.count();
        }
    }

    private void addBias(float[] x, float[] bias, int rows) {
        for (int r = 0; r < rows; r++) {
            kernels.add(x, r * bias.length, bias, 0, bias.length);
        }
    }

    private void headNorm(float[] x, int rows, int heads, float[] weight) {
        int hd = c.headDim();
        for (int i = 0; i < rows * heads; i++) {
            kernels.rmsnorm(x, i * hd, x, i * hd, weight, hd, c.rmsNormEps());
        }
    }

    private void rope(ForwardState s, List<Chunk> chunks) {
        int half = c.headDim() / 2;
        int row = 0;
        for (Chunk ch : chunks) {
            int start = ch.cache().length();
            for (int i = 0; i < ch.count(); i++) {
                int pos = start + i;
                int r = row + i;
                for (int h = 0; h < c.numHeads(); h++) {
                    rotate(s.q, r * c.qDim() + h * c.headDim(), pos, half);
                }
                for (int h = 0; h < c.numKvHeads(); h++) {
                    rotate(s.k, r * c.kvDim() + h * c.headDim(), pos, half);
                }
            }
            row += ch.count();
        }
    }

    /** Hugging Face's rotate_half RoPE: element i pairs with i + headDim/2. */
    private void rotate(float[] x, int off, int pos, int half) {
        int t = pos * half;
        for (int i = 0; i < half; i++) {
            float cos = ropeCos[t + i];
            float sin = ropeSin[t + i];
            float x0 = x[off + i];
            float x1 = x[off + i + half];
            x[off + i] = x0 * cos - x1 * sin;
            x[off + i + half] = x1 * cos + x0 * sin;
        }
    }

    /** Frees the device decoder's weights, if any. */
    @Override
    public void close() {
        if (device != null) {
            device.close();
        }
    }
}
