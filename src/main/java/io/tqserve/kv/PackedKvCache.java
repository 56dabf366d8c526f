package io.tqserve.kv;

import io.tqserve.backend.ComputeBackend;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * A KV cache of any {@link KvCodec}'s entries, stored as they are (the canonical entry format), off-heap in chunks
 * of {@link #CHUNK} tokens; attention dequantizes the window on fetch (keys and values decoded to float32, then
 * ordinary attention). The uniform baselines {@code int8} / {@code int4} use it. With {@code quantizedKvStart} N > 0
 * the first N tokens are kept in bf16 ({@link Bf16Prefix}).
 */
public final class PackedKvCache extends ChunkedKvCache {
    private static final ThreadLocal<float[][]> WINDOW = ThreadLocal.withInitial(() -> new float[][] {new float[0],
            new float[0], new float[0]});

    private final int entryBytes;

    /**
     * @param codec            the per-token per-head codec of {@code scheme}
     * @param quantizedKvStart the first this-many tokens stay bf16
     */
    public PackedKvCache(KvScheme scheme, KvCodec codec, AttentionShape shape, ComputeBackend backend, int maxTokens,
            int quantizedKvStart) {
        super(scheme, codec, shape, backend, maxTokens, quantizedKvStart,
                (long) codec.entryBytes() * CHUNK * shape.layers() * shape.numKvHeads());
        if (codec.entryBytes() != layout.bytesPerTokenPerHead() || codec.headDim() != shape.headDim()) {
            throw new IllegalArgumentException("codec entry of " + codec.entryBytes() + " bytes does not match "
                    + scheme.id() + " at head_dim " + shape.headDim());
        }
        this.entryBytes = codec.entryBytes();
    }

    /** Offset of the entry of quantized token index ti (position − quantizedKvStart) of (layer, kvHead). */
    private long entryOffset(int layer, int kvHead, int ti) {
        return (((long) layer * shape.numKvHeads() + kvHead) * CHUNK + ti % CHUNK) * entryBytes;
    }

    @Override
    protected void store(int layer, int rowOffset, int rows, float[] k, float[] v) {
        int headDim = shape.headDim();
        int kvDim = shape.kvDim();
        for (int r = storePrefix(layer, rowOffset, rows, k, v); r < rows; r++) {
            int ti = length() + r - quantizedKvStart;
            for (int g = 0; g < shape.numKvHeads(); g++) {
                int src = (rowOffset + r) * kvDim + g * headDim;
                codec.encode(k, src, v, src, chunks[ti / CHUNK], entryOffset(layer, g, ti));
            }
        }
    }

    @Override
    protected void importEntry(int layer, int kvHead, int ti, MemorySegment src, long off) {
        MemorySegment.copy(src, off, chunks[ti / CHUNK], entryOffset(layer, kvHead, ti), entryBytes);
    }

    @Override
    protected void exportEntry(int layer, int kvHead, int ti, MemorySegment dst, long off) {
        MemorySegment.copy(chunks[ti / CHUNK], entryOffset(layer, kvHead, ti), dst, off, entryBytes);
    }

    @Override
    protected AttentionTasks attendStored(int layer, int rowOffset, int rows, float[] q, float[] out) {
        int headDim = shape.headDim();
        int heads = shape.groupSize();
        int kvHeads = shape.numKvHeads();
        MemorySegment[] segs = chunks;
        Bf16Prefix prefix = this.prefix;
        return new AttentionTasks(rows * kvHeads, (long) (length() + rows) * heads, task -> {
            int r = task / kvHeads;
            int g = task % kvHeads;
            int n = length() + r + 1;
            int nP = prefixTokens(n);
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
                    prefix.scores(kernels, layer, g, nP, q, qj, scale, s, 0);
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
                    prefix.accumulate(kernels, layer, g, nP, s, 0, out, qj);
                }
            }
        });
    }
}
