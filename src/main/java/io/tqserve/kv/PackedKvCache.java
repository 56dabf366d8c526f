package io.tqserve.kv;

import io.tqserve.backend.ComputeBackend;
import io.tqserve.backend.Matrix;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A KV cache of any {@link KvCodec}'s entries, stored as they are (the canonical entry format), off-heap in chunks
 * of {@link #CHUNK} tokens; attention dequantizes the window on fetch (keys and values decoded to float32, then
 * ordinary attention). The uniform baselines {@code int8} / {@code int4} use it. With {@code quantizedKvStart} N > 0
 * the first N tokens are kept in bf16 ({@link Bf16Prefix}).
 */
public final class PackedKvCache extends AbstractKvCache {
    /** Tokens per allocation chunk. */
    public static final int CHUNK = 256;
    private static final ThreadLocal<float[][]> WINDOW = ThreadLocal.withInitial(() -> new float[][] {new float[0],
            new float[0], new float[0]});

    private final Arena arena = Arena.ofShared();
    private final List<MemorySegment> chunks = new ArrayList<>(); // each (layers, numKvHeads, CHUNK, entryBytes)
    private final KvCodec codec;
    private final int entryBytes;
    private final long chunkBytes;
    private final int quantizedKvStart;
    private Bf16Prefix prefix;

    /**
     * @param codec            the per-token per-head codec of {@code scheme}
     * @param quantizedKvStart the first this-many tokens stay bf16
     */
    public PackedKvCache(KvScheme scheme, KvCodec codec, AttentionShape shape, ComputeBackend backend, int maxTokens,
            int quantizedKvStart) {
        super(scheme, shape, backend, maxTokens);
        if (codec.entryBytes() != layout.bytesPerTokenPerHead() || codec.headDim() != shape.headDim()) {
            throw new IllegalArgumentException("codec entry of " + codec.entryBytes() + " bytes does not match "
                    + scheme.id() + " at head_dim " + shape.headDim());
        }
        if (quantizedKvStart < 0) {
            throw new IllegalArgumentException("quantizedKvStart must be >= 0, got " + quantizedKvStart);
        }
        this.codec = codec;
        this.entryBytes = codec.entryBytes();
        this.chunkBytes = (long) entryBytes * CHUNK * shape.layers() * shape.numKvHeads();
        this.quantizedKvStart = quantizedKvStart;
    }

    @Override
    public long bytesAllocated() {
        return chunkBytes * chunks.size() + (prefix == null ? 0 : prefix.bytes());
    }

    @Override
    public long bytesUsed() {
        int kept = Math.min(length, quantizedKvStart);
        return shape.layout(KvScheme.BF16).bytesFor(kept) + layout.bytesFor(length - kept);
    }

    @Override
    protected void ensureCapacity(int tokens) {
        if (quantizedKvStart > 0 && prefix == null) {
            prefix = new Bf16Prefix(shape, Math.min(quantizedKvStart, maxTokens), arena);
        }
        while ((long) chunks.size() * CHUNK < tokens - quantizedKvStart) {
            chunks.add(arena.allocate(chunkBytes, 64));
        }
    }

    /** Offset of the entry of quantized token index ti (position − quantizedKvStart) of (layer, kvHead). */
    private long entryOffset(int layer, int kvHead, int ti) {
        return (((long) layer * shape.numKvHeads() + kvHead) * CHUNK + ti % CHUNK) * entryBytes;
    }

    @Override
    protected void store(int layer, int rowOffset, int rows, float[] k, float[] v) {
        int headDim = shape.headDim();
        int kvDim = shape.kvDim();
        for (int r = 0; r < rows; r++) {
            int pos = length + r;
            for (int g = 0; g < shape.numKvHeads(); g++) {
                int src = (rowOffset + r) * kvDim + g * headDim;
                if (pos < quantizedKvStart) {
                    prefix.store(layer, g, pos, k, src, v, src);
                } else {
                    int ti = pos - quantizedKvStart;
                    codec.encode(k, src, v, src, chunks.get(ti / CHUNK), entryOffset(layer, g, ti));
                }
            }
        }
    }

    @Override
    protected void importEntries(int layer, int count, MemorySegment src) {
        float[] k = new float[shape.headDim()];
        float[] v = new float[shape.headDim()];
        for (int t = 0; t < count; t++) {
            int pos = length + t;
            for (int g = 0; g < shape.numKvHeads(); g++) {
                long off = ((long) t * shape.numKvHeads() + g) * entryBytes;
                if (pos < quantizedKvStart) {
                    prefix.importEntry(layer, g, pos, codec, k, v, src, off);
                } else {
                    int ti = pos - quantizedKvStart;
                    MemorySegment.copy(src, off, chunks.get(ti / CHUNK), entryOffset(layer, g, ti), entryBytes);
                }
            }
        }
    }

    @Override
    protected void exportEntries(int layer, int from, int count, MemorySegment dst) {
        float[] k = new float[shape.headDim()];
        float[] v = new float[shape.headDim()];
        for (int t = 0; t < count; t++) {
            int pos = from + t;
            for (int g = 0; g < shape.numKvHeads(); g++) {
                long off = ((long) t * shape.numKvHeads() + g) * entryBytes;
                if (pos < quantizedKvStart) {
                    prefix.export(layer, g, pos, codec, k, v, dst, off);
                } else {
                    int ti = pos - quantizedKvStart;
                    MemorySegment.copy(chunks.get(ti / CHUNK), entryOffset(layer, g, ti), dst, off, entryBytes);
                }
            }
        }
    }

    @Override
    protected void attendStored(int layer, int rowOffset, int rows, float[] q, float[] out) {
        int headDim = shape.headDim();
        int heads = shape.groupSize();
        int kvHeads = shape.numKvHeads();
        MemorySegment[] segs = chunks.toArray(new MemorySegment[0]);
        backend.parallelFor(rows * kvHeads, task -> {
            int r = task / kvHeads;
            int g = task % kvHeads;
            int n = length + r + 1;
            int nP = prefix == null ? 0 : Math.min(prefix.tokens(), n);
            int nT = n - nP;
            int qOff = (rowOffset + r) * shape.qDim() + g * heads * headDim;
            float[][] w = WINDOW.get();
            if (w[0].length < nT * headDim) {
                w[0] = new float[nT * headDim * 3 / 2];
                w[1] = new float[nT * headDim * 3 / 2];
            }
            if (w[2].length < n) {
                w[2] = new float[n * 3 / 2 + 16];
            }
            float[] kw = w[0];
            float[] vw = w[1];
            float[] s = w[2];
            for (int t = 0; t < nT; t++) {
                codec.decode(segs[t / CHUNK], entryOffset(layer, g, t), kw, t * headDim, vw, t * headDim);
            }
            for (int j = 0; j < heads; j++) {
                int qj = qOff + j * headDim;
                if (nP > 0) {
                    Matrix keys = prefix.keys(layer, g);
                    for (int t = 0; t < nP; t++) {
                        s[t] = kernels.dotRow(keys, t, q, qj) * scale;
                    }
                }
                for (int t = 0; t < nT; t++) {
                    s[nP + t] = kernels.dot(q, qj, kw, t * headDim, headDim) * scale;
                }
                kernels.softmax(s, 0, n);
                Arrays.fill(out, qj, qj + headDim, 0f);
                for (int t = 0; t < nT; t++) {
                    kernels.axpy(s[nP + t], vw, t * headDim, out, qj, headDim);
                }
                if (nP > 0) {
                    Matrix values = prefix.values(layer, g);
                    for (int t = 0; t < nP; t++) {
                        kernels.axpyRow(s[t], values, t, out, qj);
                    }
                }
            }
        });
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            chunks.clear();
            prefix = null;
            arena.close();
        }
    }
}
