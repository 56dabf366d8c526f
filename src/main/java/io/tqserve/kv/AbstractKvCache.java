package io.tqserve.kv;

import io.tqserve.backend.AbstractSequenceKv;
import io.tqserve.backend.ComputeBackend;
import io.tqserve.backend.Kernels;
import java.lang.foreign.MemorySegment;

/**
 * What every cache scheme shares: length bookkeeping, the full-precision attention of a fresh prefill, and
 * the store-then-attend order of later steps (the length and the argument checks come from
 * {@link AbstractSequenceKv}). Subclasses store K/V in their format and attend over it.
 */
public abstract class AbstractKvCache extends AbstractSequenceKv implements KvCache {
    protected final AttentionShape shape;
    protected final KvLayout layout;
    protected final ComputeBackend backend;
    protected final Kernels kernels;
    protected final float scale;
    private final ThreadLocal<float[]> scores = new ThreadLocal<>();

    protected AbstractKvCache(KvScheme scheme, AttentionShape shape, ComputeBackend backend, int maxTokens) {
        super(maxTokens, (long) shape.numKvHeads() * shape.layout(scheme).bytesPerTokenPerHead());
        this.shape = shape;
        this.layout = shape.layout(scheme);
        this.backend = backend;
        this.kernels = backend.kernels();
        this.scale = (float) (1.0 / Math.sqrt(shape.headDim()));
    }

    @Override
    public AttentionShape shape() {
        return shape;
    }

    @Override
    public KvLayout layout() {
        return layout;
    }

    /** Most rows one attention task of a multi-row pass serves (bounds a task's scratch by its rows). */
    protected static final int ROWS_PER_TASK = 16;

    /** What a task of {@link #rowTasks} attends: rows [r0, r0 + count) of the pass for one KV head. */
    @FunctionalInterface
    protected interface RowsOfKvHead {
        void attend(int kvHead, int r0, int count);
    }

    /**
     * The rows of a multi-row pass (a verification pass's draft, a prompt's continuation) as tasks per KV head and
     * part of the rows: at most {@link #ROWS_PER_TASK} rows a task, in enough parts to give every backend thread a
     * task. The cost estimate is the positions a task's rows attend.
     */
    protected final AttentionTasks rowTasks(int rows, RowsOfKvHead body) {
        int kvHeads = shape.numKvHeads();
        int parts = Math.min(rows, Math.max((rows + ROWS_PER_TASK - 1) / ROWS_PER_TASK,
                (backend.threads() + kvHeads - 1) / kvHeads));
        return new AttentionTasks(parts * kvHeads, (long) (length() + rows) * ((rows + parts - 1) / parts), task -> {
            int part = task / kvHeads;
            int r0 = (int) ((long) rows * part / parts);
            int r1 = (int) ((long) rows * (part + 1) / parts);
            body.attend(task % kvHeads, r0, r1 - r0);
        });
    }

    @Override
    public final void attend(int layer, int rowOffset, int rows, float[] q, float[] k, float[] v, float[] out) {
        AttentionTasks tasks = stage(layer, rowOffset, rows, q, k, v, out);
        backend.parallelFor(tasks.count(), tasks.body());
    }

    /** Stores the rows' K/V, then returns their attention (storing reads k and v, it never changes them). */
    @Override
    public final AttentionTasks stage(int layer, int rowOffset, int rows, float[] q, float[] k, float[] v,
            float[] out) {
        beginPass(rows);
        ensureCapacity(length() + rows);
        boolean fresh = length() == 0 && attendsFreshPrefillInFullPrecision();
        store(layer, rowOffset, rows, k, v);
        return fresh ? attendFloat(rowOffset, rows, q, k, v, out) : attendStored(layer, rowOffset, rows, q, out);
    }

    @Override
    public final void importLayer(int layer, int count, MemorySegment src) {
        MemorySegment exact = beginImport(count, src);
        ensureCapacity(length() + count);
        importEntries(layer, count, exact);
    }

    @Override
    public final void exportLayer(int layer, int from, int count, MemorySegment dst) {
        exportEntries(layer, from, count, checkExport(from, count, dst));
    }

    /** Writes entries of tokens length()..length()+count-1 of layer from src (canonical format). */
    protected abstract void importEntries(int layer, int count, MemorySegment src);

    /** Reads entries of tokens [from, from+count) of layer into dst (canonical format). */
    protected abstract void exportEntries(int layer, int from, int count, MemorySegment dst);

    /** True for every scheme: a fresh prefill attends over its own unquantized K/V. */
    protected boolean attendsFreshPrefillInFullPrecision() {
        return true;
    }

    /** Grows storage so that {@code tokens} tokens fit. */
    protected abstract void ensureCapacity(int tokens);

    /** Stores rows [rowOffset, rowOffset+rows) of k and v at positions length() .. length()+rows-1 of layer. */
    protected abstract void store(int layer, int rowOffset, int rows, float[] k, float[] v);

    /**
     * Attention of each new row (position length()+r) over the stored tokens [0, length()+r], as tasks (the rows'
     * K/V are stored already).
     */
    protected abstract AttentionTasks attendStored(int layer, int rowOffset, int rows, float[] q, float[] out);

    /** Per-thread score buffer of at least n floats. */
    protected final float[] scores(int n) {
        float[] s = scores.get();
        if (s == null || s.length < n) {
            s = new float[Math.max(n, 256)];
            scores.set(s);
        }
        return s;
    }

    /** Causal full-precision attention of the chunk over itself (fresh prefill). */
    private AttentionTasks attendFloat(int rowOffset, int rows, float[] q, float[] k, float[] v, float[] out) {
        int headDim = shape.headDim();
        int qDim = shape.qDim();
        int kvDim = shape.kvDim();
        int group = shape.groupSize();
        return new AttentionTasks(rows * shape.numHeads(), rows, task -> {
            int r = task / shape.numHeads();
            int h = task % shape.numHeads();
            int g = h / group;
            int qOff = (rowOffset + r) * qDim + h * headDim;
            int n = r + 1;
            float[] s = scores(n);
            for (int t = 0; t < n; t++) {
                s[t] = kernels.dot(q, qOff, k, (rowOffset + t) * kvDim + g * headDim, headDim) * scale;
            }
            kernels.softmax(s, 0, n);
            java.util.Arrays.fill(out, qOff, qOff + headDim, 0f);
            for (int t = 0; t < n; t++) {
                kernels.axpy(s[t], v, (rowOffset + t) * kvDim + g * headDim, out, qOff, headDim);
            }
        });
    }
}
