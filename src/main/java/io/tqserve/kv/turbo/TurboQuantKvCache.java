package io.tqserve.kv.turbo;

import io.tqserve.backend.ComputeBackend;
import io.tqserve.kv.AbstractKvCache;
import io.tqserve.kv.AttentionShape;
import io.tqserve.kv.Bf16Prefix;
import io.tqserve.kv.KvScheme;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The TurboQuant KV cache ({@code turbo:k<K>v<V>}): off-heap, growing in chunks of {@link #CHUNK} tokens. A chunk
 * holds, per (layer, KV head), 16 blocks of 16 tokens in the {@link TurboBlockLayout} arrangement of the codec's
 * entries, so the bytes it holds per token are exactly {@code KvLayout}'s. Attention runs one of three
 * {@link AttentionPath}s (default {@link AttentionPath#FUSED}), in parallel over (row, KV head) tasks, each task
 * serving all query heads that share its KV head so the cache is read once per KV head.
 *
 * <p>With {@code quantizedKvStart} N > 0 the first N tokens of the sequence are kept in bf16 ({@link Bf16Prefix});
 * the rest are stored quantized (turbo index = position − N).
 */
public final class TurboQuantKvCache extends AbstractKvCache {
    /** Tokens per allocation chunk (a multiple of the 16-token block). */
    public static final int CHUNK = 256;
    static final int BLOCKS = CHUNK / TurboBlockLayout.TOKENS;
    /** Below this many new entries per layer, store runs on the caller's thread. */
    private static final int PARALLEL_STORE_ENTRIES = 64;

    private final Arena arena = Arena.ofShared();
    private final List<MemorySegment> chunks = new ArrayList<>(); // each (layers, numKvHeads, BLOCKS, block bytes)
    private MemorySegment[] chunkArray = new MemorySegment[0];
    private final TurboCodec codec;
    private final TurboBlockLayout blocks;
    private final long chunkBytes;
    private final int quantizedKvStart;
    private final AttentionPath path;
    private final boolean vector;
    private final TurboAttention attention;
    private Bf16Prefix prefix;

    /** A cache with the fused path and no bf16 prefix. */
    public TurboQuantKvCache(KvScheme.Turbo scheme, AttentionShape shape, ComputeBackend backend, int maxTokens) {
        this(scheme, shape, backend, maxTokens, 0, AttentionPath.FUSED);
    }

    /**
     * @param quantizedKvStart the first this-many tokens stay bf16 (0: every token is quantized)
     * @param path             the attention path
     */
    public TurboQuantKvCache(KvScheme.Turbo scheme, AttentionShape shape, ComputeBackend backend, int maxTokens,
            int quantizedKvStart, AttentionPath path) {
        this(scheme, shape, backend, maxTokens, quantizedKvStart, path, TurboSimd.ENABLED);
    }

    /** As above; {@code vector} false runs the scalar twins of the attention kernels (parity tests). */
    TurboQuantKvCache(KvScheme.Turbo scheme, AttentionShape shape, ComputeBackend backend, int maxTokens,
            int quantizedKvStart, AttentionPath path, boolean vector) {
        super(scheme, shape, backend, maxTokens);
        if (quantizedKvStart < 0) {
            throw new IllegalArgumentException("quantizedKvStart must be >= 0, got " + quantizedKvStart);
        }
        TurboLayout entry = TurboLayout.of(scheme, shape.headDim());
        this.vector = vector && TurboSimd.ENABLED && FusedScores.SUPPORTED;
        this.codec = this.vector ? new TurboCodec(entry) : TurboCodec.scalar(entry);
        this.blocks = new TurboBlockLayout(entry);
        this.chunkBytes = (long) blocks.bytes() * BLOCKS * shape.layers() * shape.numKvHeads();
        this.quantizedKvStart = quantizedKvStart;
        this.path = path;
        this.attention = new TurboAttention(this);
    }

    public AttentionPath path() {
        return path;
    }

    public int quantizedKvStart() {
        return quantizedKvStart;
    }

    // ---------------------------------------------------------------- what TurboAttention reads

    TurboBlockLayout blocks() {
        return blocks;
    }

    MemorySegment[] chunkArray() {
        return chunkArray;
    }

    Bf16Prefix prefix() {
        return prefix;
    }

    boolean vector() {
        return vector;
    }

    float scale() {
        return scale;
    }

    ComputeBackend backend() {
        return backend;
    }

    io.tqserve.backend.Kernels kernels() {
        return kernels;
    }

    /** Offset, inside every chunk, of the run of blocks of one layer and KV head. */
    long headBase(int layer, int kvHead) {
        return ((long) layer * shape.numKvHeads() + kvHead) * BLOCKS * blocks.bytes();
    }

    // ---------------------------------------------------------------- storage

    @Override
    public long bytesAllocated() {
        return chunkBytes * chunks.size() + (prefix == null ? 0 : prefix.bytes());
    }

    /** KvLayout bytes of the quantized tokens plus bf16 bytes of the tokens kept in bf16. */
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
        int quantized = Math.max(0, tokens - quantizedKvStart);
        while ((long) chunks.size() * CHUNK < quantized) {
            chunks.add(arena.allocate(chunkBytes, 64));
        }
        if (chunkArray.length != chunks.size()) {
            chunkArray = chunks.toArray(new MemorySegment[0]);
        }
    }

    @Override
    protected void store(int layer, int rowOffset, int rows, float[] k, float[] v) {
        int headDim = shape.headDim();
        int kvDim = shape.kvDim();
        int kvHeads = shape.numKvHeads();
        int first = Math.max(0, quantizedKvStart - length); // rows before it go to the bf16 prefix
        for (int r = 0; r < Math.min(first, rows); r++) {
            for (int g = 0; g < kvHeads; g++) {
                int src = (rowOffset + r) * kvDim + g * headDim;
                prefix.store(layer, g, length + r, k, src, v, src);
            }
        }
        if (first >= rows) {
            return;
        }
        int tiFrom = length + first - quantizedKvStart;
        int tiTo = length + rows - quantizedKvStart;
        int bFrom = tiFrom / TurboBlockLayout.TOKENS;
        int nb = (tiTo - 1) / TurboBlockLayout.TOKENS + 1 - bFrom;
        int tasks = kvHeads * nb;
        int rowOfTi0 = quantizedKvStart - length; // row index of turbo index 0 (may be negative)
        java.util.function.IntConsumer body = task -> {
            int g = task / nb;
            int b = bFrom + task % nb;
            int lo = Math.max(tiFrom, b * TurboBlockLayout.TOKENS);
            int hi = Math.min(tiTo, (b + 1) * TurboBlockLayout.TOKENS);
            TurboAttention.Scratch s = TurboAttention.scratch();
            MemorySegment entry = s.entry(codec.entryBytes());
            int[] codes = s.codes(headDim);
            MemorySegment seg = chunkArray[b / BLOCKS];
            long blk = headBase(layer, g) + (long) (b % BLOCKS) * blocks.bytes();
            for (int ti = lo; ti < hi; ti++) {
                int src = (rowOffset + rowOfTi0 + ti) * kvDim + g * headDim;
                codec.encode(k, src, v, src, entry, 0);
                blocks.scatter(entry, 0, seg, blk, ti % TurboBlockLayout.TOKENS, codes);
            }
        };
        if ((tiTo - tiFrom) * kvHeads >= PARALLEL_STORE_ENTRIES) {
            backend.parallelFor(tasks, body);
        } else {
            for (int task = 0; task < tasks; task++) {
                body.accept(task);
            }
        }
    }

    @Override
    protected void importEntries(int layer, int count, MemorySegment src) {
        int entryBytes = codec.entryBytes();
        int d = shape.headDim();
        TurboAttention.Scratch s = TurboAttention.scratch();
        int[] codes = s.codes(d);
        for (int t = 0; t < count; t++) {
            int pos = length + t;
            for (int g = 0; g < shape.numKvHeads(); g++) {
                long off = ((long) t * shape.numKvHeads() + g) * entryBytes;
                if (pos < quantizedKvStart) {
                    prefix.importEntry(layer, g, pos, codec, s.row(d), s.row2(d), src, off);
                } else {
                    int ti = pos - quantizedKvStart;
                    blocks.scatter(src, off, chunkArray[ti / CHUNK], headBase(layer, g)
                            + (long) (ti % CHUNK / TurboBlockLayout.TOKENS) * blocks.bytes(), ti % TurboBlockLayout.TOKENS, codes);
                }
            }
        }
    }

    @Override
    protected void exportEntries(int layer, int from, int count, MemorySegment dst) {
        int entryBytes = codec.entryBytes();
        int d = shape.headDim();
        TurboAttention.Scratch s = TurboAttention.scratch();
        int[] codes = s.codes(d);
        for (int t = 0; t < count; t++) {
            int pos = from + t;
            for (int g = 0; g < shape.numKvHeads(); g++) {
                long off = ((long) t * shape.numKvHeads() + g) * entryBytes;
                if (pos < quantizedKvStart) {
                    prefix.export(layer, g, pos, codec, s.row(d), s.row2(d), dst, off);
                } else {
                    int ti = pos - quantizedKvStart;
                    blocks.gather(chunkArray[ti / CHUNK], headBase(layer, g)
                            + (long) (ti % CHUNK / TurboBlockLayout.TOKENS) * blocks.bytes(), ti % TurboBlockLayout.TOKENS,
                            dst, off, codes);
                }
            }
        }
    }

    @Override
    protected void attendStored(int layer, int rowOffset, int rows, float[] q, float[] out) {
        int kvHeads = shape.numKvHeads();
        backend.parallelFor(rows * kvHeads, task -> attention.attend(path, layer, task % kvHeads, rowOffset,
                task / kvHeads, length + task / kvHeads + 1, q, out));
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            chunks.clear();
            chunkArray = new MemorySegment[0];
            prefix = null;
            arena.close();
        }
    }
}
