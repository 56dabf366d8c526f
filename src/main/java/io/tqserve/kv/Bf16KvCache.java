package io.tqserve.kv;

import io.tqserve.backend.ComputeBackend;
import io.tqserve.backend.DType;
import io.tqserve.backend.Layouts;
import io.tqserve.backend.Matrix;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * bfloat16 KV cache, off-heap, growing in chunks of {@link #CHUNK} tokens. Within a chunk each (layer, K|V,
 * KV head) owns a contiguous (CHUNK, headDim) bf16 block, so one head's keys are a row-major matrix the
 * kernels read directly. A one-row step attends per query head; the rows of a multi-row pass (a verification
 * pass's draft, a prompt's continuation) are attended together per KV head ({@link Bf16Rows}), bit-identical to
 * attending each row alone.
 */
public final class Bf16KvCache extends AbstractKvCache {
    /** Tokens per allocation chunk. */
    public static final int CHUNK = 256;

    private final Arena arena = Arena.ofShared();
    private final List<MemorySegment> chunks = new ArrayList<>(); // each (layers, 2, numKvHeads, CHUNK, headDim) bf16
    private final long blockBytes;
    private final long chunkBytes;

    public Bf16KvCache(AttentionShape shape, ComputeBackend backend, int maxTokens) {
        super(KvScheme.BF16, shape, backend, maxTokens);
        this.blockBytes = (long) CHUNK * shape.headDim() * 2;
        this.chunkBytes = blockBytes * shape.layers() * 2 * shape.numKvHeads();
    }

    @Override
    public long bytesAllocated() {
        return chunkBytes * chunks.size();
    }

    @Override
    protected void ensureCapacity(int tokens) {
        while ((long) chunks.size() * CHUNK < tokens) {
            chunks.add(arena.allocate(chunkBytes, 64));
        }
    }

    /** The (CHUNK, headDim) block of one layer, kind (0 = K, 1 = V) and KV head inside chunk c. */
    private Matrix block(int c, int layer, int kind, int kvHead) {
        long off = ((long) (layer * 2 + kind) * shape.numKvHeads() + kvHead) * blockBytes;
        return new Matrix(chunks.get(c).asSlice(off, blockBytes), DType.BF16, CHUNK, shape.headDim());
    }

    @Override
    protected void store(int layer, int rowOffset, int rows, float[] k, float[] v) {
        int headDim = shape.headDim();
        int kvDim = shape.kvDim();
        for (int r = 0; r < rows; r++) {
            int pos = length() + r;
            int c = pos / CHUNK;
            long within = (long) (pos % CHUNK) * headDim * 2;
            for (int g = 0; g < shape.numKvHeads(); g++) {
                MemorySegment kb = block(c, layer, 0, g).data();
                MemorySegment vb = block(c, layer, 1, g).data();
                int src = (rowOffset + r) * kvDim + g * headDim;
                for (int i = 0; i < headDim; i++) {
                    kb.set(Layouts.SHORT_LE, within + 2L * i, toBf16(k[src + i]));
                    vb.set(Layouts.SHORT_LE, within + 2L * i, toBf16(v[src + i]));
                }
            }
        }
    }

    @Override
    protected void importEntries(int layer, int count, MemorySegment src) {
        long half = (long) shape.headDim() * 2;
        for (int t = 0; t < count; t++) {
            int pos = length() + t;
            for (int g = 0; g < shape.numKvHeads(); g++) {
                long entry = ((long) t * shape.numKvHeads() + g) * 2 * half;
                long within = (long) (pos % CHUNK) * half;
                MemorySegment.copy(src, entry, block(pos / CHUNK, layer, 0, g).data(), within, half);
                MemorySegment.copy(src, entry + half, block(pos / CHUNK, layer, 1, g).data(), within, half);
            }
        }
    }

    @Override
    protected void exportEntries(int layer, int from, int count, MemorySegment dst) {
        long half = (long) shape.headDim() * 2;
        for (int t = 0; t < count; t++) {
            int pos = from + t;
            for (int g = 0; g < shape.numKvHeads(); g++) {
                long entry = ((long) t * shape.numKvHeads() + g) * 2 * half;
                long within = (long) (pos % CHUNK) * half;
                MemorySegment.copy(block(pos / CHUNK, layer, 0, g).data(), within, dst, entry, half);
                MemorySegment.copy(block(pos / CHUNK, layer, 1, g).data(), within, dst, entry + half, half);
            }
        }
    }

    /** Round to nearest even bfloat16 (NaN stays NaN). */
    static short toBf16(float f) {
        int bits = Float.floatToRawIntBits(f);
        if ((bits & 0x7FFFFFFF) > 0x7F800000) {
            return (short) ((bits >>> 16) | 0x40);
        }
        return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
    }

    @Override
    protected AttentionTasks attendStored(int layer, int rowOffset, int rows, float[] q, float[] out) {
        int nChunks = chunks.size();
        int kvHeads = shape.numKvHeads();
        Matrix[] keys = new Matrix[nChunks * kvHeads];
        Matrix[] values = new Matrix[nChunks * kvHeads];
        for (int c = 0; c < nChunks; c++) {
            for (int g = 0; g < kvHeads; g++) {
                keys[c * kvHeads + g] = block(c, layer, 0, g);
                values[c * kvHeads + g] = block(c, layer, 1, g);
            }
        }
        int length = length();
        if (rows == 1) {
            return new AttentionTasks(shape.numHeads(), length + 1,
                    task -> attendHead(keys, values, rowOffset, 0, task, q, out));
        }
        return rowTasks(rows, (g, r0, count) -> Bf16Rows.attend(kernels, shape, keys, values, g, rowOffset, r0, count,
                length + r0 + 1, scale, q, out));
    }

    /** Attention of row r (position length()+r) for query head h, one call per cached token and row. */
    private void attendHead(Matrix[] keys, Matrix[] values, int rowOffset, int r, int h, float[] q, float[] out) {
        int headDim = shape.headDim();
        int g = h / shape.groupSize();
        int qOff = (rowOffset + r) * shape.qDim() + h * headDim;
        int n = length() + r + 1;
        float[] s = scores(n);
        for (int t = 0; t < n; ) { // four keys at a time (one load of q for four rows), never across a chunk
            int within = t % CHUNK;
            int count = Math.min(4, Math.min(n - t, CHUNK - within));
            kernels.matvec(keys[(t / CHUNK) * shape.numKvHeads() + g], within, count, q, qOff, s, t);
            t += count;
        }
        kernels.scale(s, 0, n, scale);
        kernels.softmax(s, 0, n);
        Arrays.fill(out, qOff, qOff + headDim, 0f);
        for (int t = 0; t < n; t++) {
            kernels.axpyRow(s[t], values[(t / CHUNK) * shape.numKvHeads() + g], t % CHUNK, out, qOff);
        }
    }

    @Override
    protected void free() {
        chunks.clear();
        arena.close();
    }
}
