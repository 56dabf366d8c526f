package io.tqserve.kv;

import io.tqserve.backend.ComputeBackend;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * What the quantized caches ({@link PackedKvCache}, {@code turbo.TurboQuantKvCache}) share: the first
 * {@code quantizedKvStart} tokens kept in bf16 ({@link Bf16Prefix}), the rest stored off-heap in chunks of
 * {@link #CHUNK} tokens (quantized index ti = position − quantizedKvStart), the byte counts of that split, and the
 * export/import loops that send each token either to the prefix or to the subclass's entry format.
 */
public abstract class ChunkedKvCache extends AbstractKvCache {
    /** Tokens per allocation chunk (a multiple of TurboQuant's 16-token block). */
    public static final int CHUNK = 256;

    private final Arena arena = Arena.ofShared();
    private final long chunkBytes;
    protected final KvCodec codec;
    protected final int quantizedKvStart;
    /** The allocated chunks, each {@code chunkBytes} long; replaced (not mutated) when the cache grows. */
    protected MemorySegment[] chunks = new MemorySegment[0];
    /** The bf16 prefix, allocated with the first chunk when quantizedKvStart > 0, else null. */
    protected Bf16Prefix prefix;

    /**
     * @param codec            the per-token per-head codec of the scheme (its entries are the export format)
     * @param chunkBytes       bytes of one chunk of {@link #CHUNK} quantized tokens, all layers and KV heads
     * @param quantizedKvStart the first this-many tokens stay bf16 (0: every token is quantized)
     */
    protected ChunkedKvCache(KvScheme scheme, KvCodec codec, AttentionShape shape, ComputeBackend backend,
            int maxTokens, int quantizedKvStart, long chunkBytes) {
        super(scheme, shape, backend, maxTokens);
        if (quantizedKvStart < 0) {
            throw new IllegalArgumentException("quantizedKvStart must be >= 0, got " + quantizedKvStart);
        }
        this.codec = codec;
        this.chunkBytes = chunkBytes;
        this.quantizedKvStart = quantizedKvStart;
    }

    public int quantizedKvStart() {
        return quantizedKvStart;
    }

    @Override
    public long bytesAllocated() {
        return chunkBytes * chunks.length + (prefix == null ? 0 : prefix.bytes());
    }

    /** KvLayout bytes of the quantized tokens plus bf16 bytes of the tokens kept in bf16. */
    @Override
    public long bytesUsed() {
        int kept = Math.min(length(), quantizedKvStart);
        return shape.layout(KvScheme.BF16).bytesFor(kept) + layout.bytesFor(length() - kept);
    }

    @Override
    protected void ensureCapacity(int tokens) {
        if (quantizedKvStart > 0 && prefix == null) {
            prefix = new Bf16Prefix(shape, Math.min(quantizedKvStart, maxTokens()), arena);
        }
        int have = chunks.length;
        int need = have;
        while ((long) need * CHUNK < tokens - quantizedKvStart) {
            need++;
        }
        if (need > have) {
            MemorySegment[] grown = Arrays.copyOf(chunks, need);
            for (int c = have; c < need; c++) {
                grown[c] = arena.allocate(chunkBytes, 64);
            }
            chunks = grown;
        }
    }

    /**
     * Stores the rows of a pass that fall in the bf16 prefix (positions below quantizedKvStart) and returns how
     * many rows that was; the subclass stores rows from there on as quantized entries.
     */
    protected final int storePrefix(int layer, int rowOffset, int rows, float[] k, float[] v) {
        int first = Math.min(rows, Math.max(0, quantizedKvStart - length()));
        int headDim = shape.headDim();
        int kvDim = shape.kvDim();
        for (int r = 0; r < first; r++) {
            for (int g = 0; g < shape.numKvHeads(); g++) {
                int src = (rowOffset + r) * kvDim + g * headDim;
                prefix.store(layer, g, length() + r, k, src, v, src);
            }
        }
        return first;
    }

    /** Copies the entry at src[off] (codec format) to quantized token ti of (layer, kvHead). */
    protected abstract void importEntry(int layer, int kvHead, int ti, MemorySegment src, long off);

    /** Copies quantized token ti of (layer, kvHead) to dst[off] in the codec format. */
    protected abstract void exportEntry(int layer, int kvHead, int ti, MemorySegment dst, long off);

    @Override
    protected final void importEntries(int layer, int count, MemorySegment src) {
        float[] k = new float[shape.headDim()];
        float[] v = new float[shape.headDim()];
        int entryBytes = codec.entryBytes();
        for (int t = 0; t < count; t++) {
            int pos = length() + t;
            for (int g = 0; g < shape.numKvHeads(); g++) {
                long off = ((long) t * shape.numKvHeads() + g) * entryBytes;
                if (pos < quantizedKvStart) {
                    prefix.importEntry(layer, g, pos, codec, k, v, src, off);
                } else {
                    importEntry(layer, g, pos - quantizedKvStart, src, off);
                }
            }
        }
    }

    @Override
    protected final void exportEntries(int layer, int from, int count, MemorySegment dst) {
        float[] k = new float[shape.headDim()];
        float[] v = new float[shape.headDim()];
        int entryBytes = codec.entryBytes();
        for (int t = 0; t < count; t++) {
            int pos = from + t;
            for (int g = 0; g < shape.numKvHeads(); g++) {
                long off = ((long) t * shape.numKvHeads() + g) * entryBytes;
                if (pos < quantizedKvStart) {
                    prefix.export(layer, g, pos, codec, k, v, dst, off);
                } else {
                    exportEntry(layer, g, pos - quantizedKvStart, dst, off);
                }
            }
        }
    }

    /** Tokens of a window of n that lie in the bf16 prefix. */
    protected final int prefixTokens(int n) {
        return prefix == null ? 0 : Math.min(prefix.tokens(), n);
    }

    @Override
    protected final void free() {
        chunks = new MemorySegment[0];
        prefix = null;
        arena.close();
    }
}
