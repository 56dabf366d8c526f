package io.tqserve.kv;

import io.tqserve.backend.DType;
import io.tqserve.backend.Kernels;
import io.tqserve.backend.Layouts;
import io.tqserve.backend.Matrix;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The first {@code quantizedKvStart} tokens of a quantized cache, kept in bfloat16 (the {@code quantized-kv-start}
 * setting): per (layer, K|V, KV head) one (tokens, headDim) bf16 matrix, allocated once from the cache's arena.
 * In the canonical export format these tokens are written as the scheme's entries (the format has one entry
 * layout per scheme), i.e. quantized; an import of such entries stores their decoded values rounded to bf16.
 */
public final class Bf16Prefix {
    private final AttentionShape shape;
    private final int tokens;
    private final long blockBytes;
    private final MemorySegment data; // (layers, 2, numKvHeads, tokens, headDim) bf16

    public Bf16Prefix(AttentionShape shape, int tokens, Arena arena) {
        this.shape = shape;
        this.tokens = tokens;
        this.blockBytes = (long) tokens * shape.headDim() * 2;
        this.data = arena.allocate(Math.max(1, blockBytes * 2 * shape.layers() * shape.numKvHeads()), 64);
    }

    /** Tokens this prefix holds at most. */
    public int tokens() {
        return tokens;
    }

    /** Bytes allocated. */
    public long bytes() {
        return blockBytes * 2 * shape.layers() * shape.numKvHeads();
    }

    /** The (tokens, headDim) bf16 keys of one layer and KV head. */
    public Matrix keys(int layer, int kvHead) {
        return block(layer, 0, kvHead);
    }

    /** The (tokens, headDim) bf16 values of one layer and KV head. */
    public Matrix values(int layer, int kvHead) {
        return block(layer, 1, kvHead);
    }

    private Matrix block(int layer, int kind, int kvHead) {
        long off = ((long) (layer * 2 + kind) * shape.numKvHeads() + kvHead) * blockBytes;
        return new Matrix(data.asSlice(off, blockBytes), DType.BF16, tokens, shape.headDim());
    }

    /** Stores the K and V rows of one KV head at position pos: k[kOff, +headDim), v[vOff, +headDim). */
    public void store(int layer, int kvHead, int pos, float[] k, int kOff, float[] v, int vOff) {
        int d = shape.headDim();
        MemorySegment kb = keys(layer, kvHead).data();
        MemorySegment vb = values(layer, kvHead).data();
        long at = (long) pos * d * 2;
        for (int i = 0; i < d; i++) {
            kb.set(Layouts.SHORT_LE, at + 2L * i, Bf16Codec.toBf16(k[kOff + i]));
            vb.set(Layouts.SHORT_LE, at + 2L * i, Bf16Codec.toBf16(v[vOff + i]));
        }
    }

    /** Writes the entry of (pos, kvHead) in the codec's format at dst[off]; k and v are headDim scratch rows. */
    public void export(int layer, int kvHead, int pos, KvCodec codec, float[] k, float[] v, MemorySegment dst, long off) {
        keys(layer, kvHead).row(pos, k);
        values(layer, kvHead).row(pos, v);
        codec.encode(k, 0, v, 0, dst, off);
    }

    /** Stores the decoded entry at src[off] (codec format) at (pos, kvHead). */
    public void importEntry(int layer, int kvHead, int pos, KvCodec codec, float[] k, float[] v, MemorySegment src,
            long off) {
        codec.decode(src, off, k, 0, v, 0);
        store(layer, kvHead, pos, k, 0, v, 0);
    }

    /**
     * Scores of one query head over the first nP tokens of (layer, kvHead):
     * s[sOff + t] = (q[qOff, +headDim) · key_t) · scale.
     */
    public void scores(Kernels kernels, int layer, int kvHead, int nP, float[] q, int qOff, float scale, float[] s,
            int sOff) {
        Matrix keys = keys(layer, kvHead);
        for (int t = 0; t < nP; t++) {
            s[sOff + t] = kernels.dotRow(keys, t, q, qOff) * scale;
        }
    }

    /** out[outOff, +headDim) += Σ_{t < nP} w[wOff + t] · value_t over the first nP tokens of (layer, kvHead). */
    public void accumulate(Kernels kernels, int layer, int kvHead, int nP, float[] w, int wOff, float[] out,
            int outOff) {
        Matrix values = values(layer, kvHead);
        for (int t = 0; t < nP; t++) {
            kernels.axpyRow(w[wOff + t], values, t, out, outOff);
        }
    }
}
