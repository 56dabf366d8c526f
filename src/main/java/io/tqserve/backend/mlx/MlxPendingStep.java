package io.tqserve.backend.mlx;

import io.tqserve.backend.DecoderSpec;
import io.tqserve.backend.DeviceChunk;
import io.tqserve.backend.DeviceSample;
import io.tqserve.backend.DeviceToken;
import io.tqserve.backend.PendingStep;
import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxScope;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.function.IntFunction;

/**
 * A step whose graph is queued ({@code mlx_async_eval}): the logits rows Java needs, the sampled tokens, the
 * logprobs asked for, every layer's K/V and the samplers' new state are its outputs, evaluated together as one
 * evaluation. Its scope stays open until {@link #read} or {@link #close}, on the thread that submitted it.
 */
final class MlxPendingStep implements PendingStep {
    /**
     * A sampled token of this step, as a later step's input: element {@code index} of {@code array}, the (n) int32
     * tokens of one sampling call (all the plain-greedy chunks of the step, or one chunk's own sampler).
     */
    record Token(MlxArray array, int index) implements DeviceToken {
        /** The token as a (1) int32 array. */
        MlxArray row(MlxScope s) {
            return array.shape()[0] == 1 ? array : s.slice(array, new int[] {index}, new int[] {index + 1});
        }
    }

    private final MlxBackend backend;
    private final MlxScope scope;
    private final List<DeviceChunk> chunks;
    private final int vocab;
    private final MlxArray javaLogits;   // (rows of chunks without a sampler, vocab) float32, or null
    private final int javaRows;
    private final MlxArray sampled;      // (sampled chunks) int32, or null
    private final Token[] tokens;        // per chunk, null when not sampled
    private final MlxArray[][] logprobs; // per chunk, null when not asked
    private boolean closed;

    private MlxPendingStep(MlxBackend backend, MlxScope scope, List<DeviceChunk> chunks, int vocab,
            MlxArray javaLogits, int javaRows, MlxArray sampled, Token[] tokens, MlxArray[][] logprobs) {
        this.backend = backend;
        this.scope = scope;
        this.chunks = List.copyOf(chunks);
        this.vocab = vocab;
        this.javaLogits = javaLogits;
        this.javaRows = javaRows;
        this.sampled = sampled;
        this.tokens = tokens;
        this.logprobs = logprobs;
    }

    /**
     * Finishes a step whose forward is built, as mlx-lm's {@code _step}: samples the sampled chunks in the graph
     * ({@link #sampleOnDevice}), gathers the logits rows Java samples ({@link #javaLogits}), queues everything for
     * one evaluation, commits the samplers' staged state ({@link #commitSamplers}) and frees the scope's other
     * arrays ({@link #keepOnly}). Called with the device held.
     *
     * @param input   a chunk's input ids (made on demand: only samplers with penalties read them)
     * @param head    (logit rows, vocab) in the compute dtype
     * @param outputs the layers' K/V arrays, to evaluate with the rest
     */
    static MlxPendingStep queue(MlxBackend backend, MlxScope s, DecoderSpec spec, List<DeviceChunk> chunks,
            IntFunction<MlxArray> input, MlxArray head, List<MlxArray> outputs) {
        int vocab = spec.vocabSize();
        MlxArray all = s.astype(head, MlxDtype.FLOAT32);
        Token[] tokens = new Token[chunks.size()];
        MlxArray[][] logprobs = new MlxArray[chunks.size()][];
        MlxArray sampled = sampleOnDevice(s, chunks, all, input, tokens, logprobs, outputs);
        int[] javaRows = javaRows(chunks);
        MlxArray javaLogits = javaLogits(s, all, javaRows, outputs);
        Set<MlxArray> distinct = Collections.newSetFromMap(new IdentityHashMap<>()); // a pool's arrays come per chunk
        s.asyncEval(outputs.stream().filter(distinct::add).toArray(MlxArray[]::new));
        commitSamplers(chunks);
        keepOnly(s, javaLogits, sampled, tokens, logprobs);
        return new MlxPendingStep(backend, s, chunks, vocab, javaLogits, javaRows.length, sampled, tokens, logprobs);
    }

    /**
     * Adds each sampled chunk's sampling to the graph: fills {@code tokens} and {@code logprobs} per chunk and adds
     * the logprobs and the samplers' staged state to {@code outputs}. The chunks whose sampler is plain greedy
     * ({@link MlxSampler#plainGreedy}) are sampled together, one argmax over their rows, so a greedy decode step
     * has one sampling call whatever its batch; the others each by their own sampler. Returns the sampled ids of
     * all sampled chunks in chunk order as one int32 array, also an output, or null when none samples on the device.
     */
    private static MlxArray sampleOnDevice(MlxScope s, List<DeviceChunk> chunks, MlxArray all,
            IntFunction<MlxArray> input, Token[] tokens, MlxArray[][] logprobs, List<MlxArray> outputs) {
        int vocab = all.shape()[1];
        MlxArray greedy = greedyTokens(s, chunks, all, tokens);
        boolean onlyGreedy = true;
        int out = 0;
        for (int i = 0; i < chunks.size(); i++) {
            DeviceChunk ch = chunks.get(i);
            if (ch.sampler() instanceof MlxSampler ms && tokens[i] == null) {
                onlyGreedy = false;
                MlxArray row = s.slice(all, new int[] {out, 0}, new int[] {out + 1, vocab});
                MlxArray token = ms.sample(s, row, input.apply(i));
                tokens[i] = new Token(token, 0);
                if (ms.topLogprobs() >= 0) {
                    logprobs[i] = ms.logprobs(s, row, token);
                    for (MlxArray a : logprobs[i]) {
                        if (a != null) {
                            outputs.add(a);
                        }
                    }
                }
                ms.stateArrays(outputs);
            }
            out += ch.logitRows();
        }
        if (onlyGreedy && greedy == null) {
            return null;
        }
        MlxArray sampled;
        if (onlyGreedy) {
            sampled = s.contiguous(greedy);
        } else {
            List<MlxArray> sampledTokens = new ArrayList<>();
            for (Token t : tokens) {
                if (t != null) {
                    sampledTokens.add(t.row(s));
                }
            }
            sampled = s.contiguous(sampledTokens.size() == 1 ? sampledTokens.get(0)
                    : s.concatenate(0, sampledTokens.toArray(MlxArray[]::new)));
        }
        outputs.add(sampled);
        return sampled;
    }

    /**
     * One argmax over the logits rows of the chunks with a plain-greedy sampler, as a (G) int32 array (null when
     * there are none); sets their tokens to its elements.
     */
    private static MlxArray greedyTokens(MlxScope s, List<DeviceChunk> chunks, MlxArray all, Token[] tokens) {
        List<Integer> chunkIds = new ArrayList<>();
        List<Integer> rows = new ArrayList<>();
        int out = 0;
        for (int i = 0; i < chunks.size(); i++) {
            DeviceChunk ch = chunks.get(i);
            if (ch.sampler() instanceof MlxSampler ms && ms.plainGreedy()) {
                chunkIds.add(i);
                rows.add(out);
            }
            out += ch.logitRows();
        }
        if (chunkIds.isEmpty()) {
            return null;
        }
        MlxArray logits = all;
        if (rows.size() != out) {
            int[] r = rows.stream().mapToInt(Integer::intValue).toArray();
            logits = s.take(all, s.fromInts(r, 0, r.length, r.length), 0);
        }
        MlxArray greedy = s.astype(s.argmax(logits, 1, false), MlxDtype.INT32);
        for (int j = 0; j < chunkIds.size(); j++) {
            tokens[chunkIds.get(j)] = new Token(greedy, j);
        }
        return greedy;
    }

    /** The logits rows (of all chunks' rows) of the chunks Java samples. */
    private static int[] javaRows(List<DeviceChunk> chunks) {
        List<Integer> rows = new ArrayList<>();
        int out = 0;
        for (DeviceChunk ch : chunks) {
            if (!(ch.sampler() instanceof MlxSampler)) {
                for (int j = 0; j < ch.logitRows(); j++) {
                    rows.add(out + j);
                }
            }
            out += ch.logitRows();
        }
        return rows.stream().mapToInt(Integer::intValue).toArray();
    }

    /** Rows {@code rows} of {@code all} as a contiguous float32 output, or null when there are none. */
    private static MlxArray javaLogits(MlxScope s, MlxArray all, int[] rows, List<MlxArray> outputs) {
        if (rows.length == 0) {
            return null;
        }
        MlxArray picked = rows.length == all.shape()[0] ? all
                : s.take(all, s.fromInts(rows, 0, rows.length, rows.length), 0);
        MlxArray javaLogits = s.contiguous(picked);
        outputs.add(javaLogits);
        return javaLogits;
    }

    /**
     * Makes the samplers' staged state current. The state is queued for evaluation, not yet computed: a later step
     * that reads it waits for it, and a step that fails to build later aborts only its own staging.
     */
    private static void commitSamplers(List<DeviceChunk> chunks) {
        for (DeviceChunk ch : chunks) {
            if (ch.sampler() instanceof MlxSampler ms) {
                ms.commit();
            }
        }
    }

    /** Frees the scope's arrays except what {@link #read} and later steps need (see {@link MlxScope#releaseExcept}). */
    private static void keepOnly(MlxScope s, MlxArray javaLogits, MlxArray sampled, Token[] tokens,
            MlxArray[][] logprobs) {
        List<MlxArray> keep = new ArrayList<>();
        keep.add(javaLogits);
        keep.add(sampled);
        for (int i = 0; i < tokens.length; i++) {
            if (tokens[i] != null) {
                keep.add(tokens[i].array());
            }
            if (logprobs[i] != null) {
                keep.addAll(java.util.Arrays.asList(logprobs[i]));
            }
        }
        s.releaseExcept(keep.toArray(MlxArray[]::new));
    }

    @Override
    public DeviceToken token(int i) {
        if (tokens[i] == null) {
            throw new IllegalArgumentException("chunk " + i + " is not sampled on the device");
        }
        return tokens[i];
    }

    @Override
    public float[] read(DeviceSample[] samples) {
        if (closed) {
            throw new IllegalStateException("step already read or closed");
        }
        try {
            return backend.device().held(() -> readQueued(samples));
        } finally {
            close();
        }
    }

    /** Waits for the step and copies its Java logits rows (in chunk order) and samples out. */
    private float[] readQueued(DeviceSample[] samples) {
        float[] rows = javaLogits == null ? new float[0] : scope.readFloats(javaLogits);
        if (rows.length != javaRows * vocab) {
            throw new IllegalStateException("read " + rows.length + " logits for " + javaRows + " rows");
        }
        // lay the Java rows out in chunk order, leaving the rows of sampled chunks unwritten
        int total = 0;
        for (DeviceChunk ch : chunks) {
            total += ch.logitRows();
        }
        float[] logits = rows.length == total * vocab ? rows : new float[total * vocab];
        if (logits != rows) {
            int src = 0;
            int dst = 0;
            for (DeviceChunk ch : chunks) {
                if (ch.sampler() == null) {
                    System.arraycopy(rows, src, logits, dst * vocab, ch.logitRows() * vocab);
                    src += ch.logitRows() * vocab;
                }
                dst += ch.logitRows();
            }
        }
        int[] ids = sampled == null ? new int[0] : scope.readInts(sampled);
        int t = 0;
        for (int i = 0; i < chunks.size(); i++) {
            samples[i] = tokens[i] == null ? null : MlxSampler.read(scope, ids[t++], logprobs[i]);
        }
        return logits;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        backend.device().heldRun(scope::close);
    }
}
