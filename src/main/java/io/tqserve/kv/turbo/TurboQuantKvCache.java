package io.tqserve.kv.turbo;

import io.tqserve.backend.ComputeBackend;
import io.tqserve.kv.AttentionShape;
import io.tqserve.kv.AttentionTasks;
import io.tqserve.kv.Bf16Prefix;
import io.tqserve.kv.ChunkedKvCache;
import io.tqserve.kv.KvScheme;
import java.lang.foreign.MemorySegment;

/**
 * The TurboQuant KV cache ({@code turbo:k<K>v<V>}): off-heap, growing in chunks of {@link #CHUNK} tokens. A chunk
 * holds, per (layer, KV head), 16 blocks of 16 tokens in the {@link TurboBlockLayout} arrangement of the codec's
 * entries, so the bytes it holds per token are exactly {@code KvLayout}'s. Attention runs one of three
 * {@link AttentionPath}s (default {@link AttentionPath#FUSED}), in parallel over (row, KV head) tasks, each task
 * serving all query heads that share its KV head so the cache is read once per KV head (on the fused path, the
 * rows of a multi-row chunk share a task too: {@link #attendStored}).
 *
 * <p>With {@code quantizedKvStart} N > 0 the first N tokens of the sequence are kept in bf16 ({@link Bf16Prefix});
 * the rest are stored quantized (turbo index = position − N).
 */
public final class TurboQuantKvCache extends ChunkedKvCache {
    static final int BLOCKS = CHUNK / TurboBlockLayout.TOKENS;
    /** Below this many new entries per layer, store runs on the caller's thread. */
    private static final int PARALLEL_STORE_ENTRIES = 64;

    private final TurboBlockLayout blocks; // chunks are (layers, numKvHeads, BLOCKS, block bytes)
    private final AttentionPath path;
    private final TurboKernels turboKernels;
    private final TurboAttention attention;

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
        this(scheme, shape, backend, maxTokens, quantizedKvStart, path, TurboKernels.preferred());
    }

    /** As above, on the given TurboQuant kernels (the parity tests run both implementations). */
    TurboQuantKvCache(KvScheme.Turbo scheme, AttentionShape shape, ComputeBackend backend, int maxTokens,
            int quantizedKvStart, AttentionPath path, TurboKernels turboKernels) {
        super(scheme, new TurboCodec(TurboLayout.of(scheme, shape.headDim()), turboKernels), shape, backend, maxTokens, quantizedKvStart,
                (long) new TurboBlockLayout(TurboLayout.of(scheme, shape.headDim())).bytes() * BLOCKS * shape.layers()
                        * shape.numKvHeads());
        this.turboKernels = turboKernels;
        this.blocks = new TurboBlockLayout(TurboLayout.of(scheme, shape.headDim()));
        this.path = path;
        this.attention = new TurboAttention(this);
    }

    public AttentionPath path() {
        return path;
    }

    // ---------------------------------------------------------------- what TurboAttention reads

    TurboBlockLayout blocks() {
        return blocks;
    }

    MemorySegment[] chunkArray() {
        return chunks;
    }

    Bf16Prefix prefix() {
        return prefix;
    }

    TurboKernels turboKernels() {
        return turboKernels;
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
    protected void store(int layer, int rowOffset, int rows, float[] k, float[] v) {
        int headDim = shape.headDim();
        int kvDim = shape.kvDim();
        int kvHeads = shape.numKvHeads();
        int first = storePrefix(layer, rowOffset, rows, k, v); // rows before it went to the bf16 prefix
        if (first >= rows) {
            return;
        }
        int length = length();
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
            MemorySegment seg = chunks[b / BLOCKS];
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

    /** Offset of the 16-token block holding quantized token ti of (layer, kvHead) inside its chunk. */
    private long blockOffset(int layer, int kvHead, int ti) {
        return headBase(layer, kvHead) + (long) (ti % CHUNK / TurboBlockLayout.TOKENS) * blocks.bytes();
    }

    @Override
    protected void importEntry(int layer, int kvHead, int ti, MemorySegment src, long off) {
        blocks.scatter(src, off, chunks[ti / CHUNK], blockOffset(layer, kvHead, ti), ti % TurboBlockLayout.TOKENS,
                TurboAttention.scratch().codes(shape.headDim()));
    }

    @Override
    protected void exportEntry(int layer, int kvHead, int ti, MemorySegment dst, long off) {
        blocks.gather(chunks[ti / CHUNK], blockOffset(layer, kvHead, ti), ti % TurboBlockLayout.TOKENS, dst, off,
                TurboAttention.scratch().codes(shape.headDim()));
    }

    /**
     * Each new row over the stored tokens. On the fused path several rows (a verification pass's draft, a prompt's
     * continuation) are attended together, at most {@link #ROWS_PER_TASK} per task ({@link TurboAttention#attendRows}:
     * the cache is fetched once per task rather than once per row, one task and its scratch per KV head rather than
     * per row and KV head), in as many tasks as the
     * backend has threads; bit-identical to attending each row alone.
     */
    @Override
    protected AttentionTasks attendStored(int layer, int rowOffset, int rows, float[] q, float[] out) {
        int kvHeads = shape.numKvHeads();
        int length = length();
        if (rows == 1 || path != AttentionPath.FUSED || (prefix != null && prefix.tokens() >= length + 1)) {
            return new AttentionTasks(rows * kvHeads, length + rows, task -> attention.attend(path, layer,
                    task % kvHeads, rowOffset, task / kvHeads, length + task / kvHeads + 1, q, out));
        }
        return rowTasks(rows, (g, r0, count) -> attention.attendRows(layer, g, rowOffset, r0, count, length + r0 + 1,
                q, out));
    }
}
