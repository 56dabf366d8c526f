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
import java.util.List;

/**
 * A step whose graph is queued ({@code mlx_async_eval}): the logits rows Java needs, the sampled tokens, the
 * logprobs asked for, every layer's K/V and the samplers' new state are its outputs, evaluated together as one
 * evaluation. Its scope stays open until {@link #read} or {@link #close}, on the thread that submitted it.
 */
final class MlxPendingStep implements PendingStep {
    /** A sampled token of this step, (1,) int32, as a later step's input. */
    record Token(MlxArray array) implements DeviceToken {
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
     * Adds the sampling of the sampled chunks to the graph, queues everything for evaluation and makes the
     * samplers' staged state current (it is part of what is being evaluated). Called with the device lock held.
     *
     * @param inputs  each chunk's input ids
     * @param head    (logit rows, vocab) in the compute dtype
     * @param outputs the layers' K/V arrays, to evaluate with the rest
     */
    static MlxPendingStep queue(MlxBackend backend, MlxScope s, DecoderSpec spec, List<DeviceChunk> chunks,
            MlxArray[] inputs, MlxArray head, List<MlxArray> outputs) {
        int vocab = spec.vocabSize();
        MlxArray all = s.astype(head, MlxDtype.FLOAT32);
        List<Integer> javaRows = new ArrayList<>();
        List<MlxArray> sampledTokens = new ArrayList<>();
        Token[] tokens = new Token[chunks.size()];
        MlxArray[][] logprobs = new MlxArray[chunks.size()][];
        int out = 0;
        for (int i = 0; i < chunks.size(); i++) {
            DeviceChunk ch = chunks.get(i);
            if (ch.sampler() instanceof MlxSampler ms) {
                MlxArray row = s.slice(all, new int[] {out, 0}, new int[] {out + 1, vocab});
                MlxArray token = ms.sample(s, row, inputs[i]);
                tokens[i] = new Token(token);
                sampledTokens.add(token);
                if (ms.topLogprobs() >= 0) {
                    logprobs[i] = ms.logprobs(s, row, token);
                    for (MlxArray a : logprobs[i]) {
                        if (a != null) {
                            outputs.add(a);
                        }
                    }
                }
                ms.stateArrays(outputs);
            } else {
                for (int j = 0; j < ch.logitRows(); j++) {
                    javaRows.add(out + j);
                }
            }
            out += ch.logitRows();
        }
        MlxArray javaLogits = null;
        if (!javaRows.isEmpty()) {
            int[] jr = javaRows.stream().mapToInt(Integer::intValue).toArray();
            javaLogits = s.contiguous(javaRows.size() == out ? all : s.take(all, s.fromInts(jr, 0, jr.length, jr.length), 0));
            outputs.add(javaLogits);
        }
        MlxArray sampled = null;
        if (!sampledTokens.isEmpty()) {
            sampled = s.contiguous(sampledTokens.size() == 1 ? sampledTokens.get(0)
                    : s.concatenate(0, sampledTokens.toArray(MlxArray[]::new)));
            outputs.add(sampled);
        }
        s.asyncEval(outputs.toArray(MlxArray[]::new));
        for (DeviceChunk ch : chunks) {
            if (ch.sampler() instanceof MlxSampler ms) {
                ms.commit();
            }
        }
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
        return new MlxPendingStep(backend, s, chunks, vocab, javaLogits, javaRows.size(), sampled, tokens, logprobs);
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
        backend.lock.lock();
        try {
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
        } finally {
            close();
            backend.lock.unlock();
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        backend.lock.lock();
        try {
            scope.close();
        } finally {
            backend.lock.unlock();
        }
    }
}
