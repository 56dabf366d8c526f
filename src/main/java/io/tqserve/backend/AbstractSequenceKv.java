package io.tqserve.backend;

import java.lang.foreign.MemorySegment;

/**
 * What every {@link SequenceKv} shares, whatever holds its memory: committed length, the rows of the pass in progress
 * (all layers of one pass or import must agree), the closed flag, {@link #advance}, {@link #truncate}, a
 * {@link #close} that frees once, and the argument checks of {@code attend}, {@code importLayer} and
 * {@code exportLayer} with one wording of their errors. The Java caches ({@code kv.AbstractKvCache}) and the MLX
 * cache extend it. Not thread-safe: a cache belongs to one lane thread at a time.
 */
public abstract class AbstractSequenceKv implements SequenceKv {
    private final int maxTokens;
    private final long entryBytesPerToken;
    private int length;
    private int pending = -1;
    private boolean closed;

    /**
     * @param maxTokens          most tokens the cache may hold
     * @param entryBytesPerToken bytes of one token of one layer in the export format (numKvHeads × entry bytes)
     */
    protected AbstractSequenceKv(int maxTokens, long entryBytesPerToken) {
        this.maxTokens = maxTokens;
        this.entryBytesPerToken = entryBytesPerToken;
    }

    @Override
    public final int length() {
        return length;
    }

    @Override
    public final int maxTokens() {
        return maxTokens;
    }

    /** True once {@link #close} has run. */
    protected final boolean closed() {
        return closed;
    }

    /** Checks that a forward pass of {@code rows} new tokens may run on this layer now. */
    protected final void beginPass(int rows) {
        checkRoom(rows);
        if (pending >= 0 && pending != rows) {
            throw new IllegalStateException("layers of one forward pass disagree on rows: " + pending + " vs " + rows);
        }
        pending = rows;
    }

    /** Checks an import of {@code count} tokens; returns {@code src} cut to exactly the bytes they occupy. */
    protected final MemorySegment beginImport(int count, MemorySegment src) {
        checkRoom(count);
        MemorySegment exact = exact(count, src, "import");
        if (pending >= 0 && pending != count) {
            throw new IllegalStateException("layers of one import disagree on tokens: " + pending + " vs " + count);
        }
        pending = count;
        return exact;
    }

    /** Checks an export of tokens [from, from+count); returns {@code dst} cut to exactly the bytes they occupy. */
    protected final MemorySegment checkExport(int from, int count, MemorySegment dst) {
        if (from < 0 || count < 0 || from + count > length) {
            throw new IllegalArgumentException("export of tokens [" + from + ", " + (from + count) + ") from a cache of "
                    + length);
        }
        return exact(count, dst, "export");
    }

    @Override
    public final void advance(int rows) {
        if (pending >= 0 && rows != pending) {
            throw new IllegalStateException("advance(" + rows + ") after a pass of " + pending + " rows");
        }
        length += rows;
        pending = -1;
    }

    @Override
    public final void truncate(int tokens) {
        if (tokens < 0 || tokens > length) {
            throw new IllegalArgumentException("cannot truncate " + length + " tokens to " + tokens);
        }
        length = tokens;
        pending = -1;
    }

    @Override
    public final void close() {
        if (!closed) {
            closed = true;
            free();
        }
    }

    /** Frees the cache's memory; called once, by the first {@link #close}. */
    protected abstract void free();

    private void checkRoom(int rows) {
        if (closed) {
            throw new IllegalStateException("KV cache is closed");
        }
        if (length + rows > maxTokens) {
            throw new IllegalStateException("KV cache holds at most " + maxTokens + " tokens; " + (length + rows)
                    + " requested");
        }
    }

    private MemorySegment exact(int count, MemorySegment seg, String what) {
        long need = count * entryBytesPerToken;
        if (seg.byteSize() < need) {
            throw new IllegalArgumentException(what + " of " + count + " tokens needs " + need + " bytes, got "
                    + seg.byteSize());
        }
        return seg.asSlice(0, need);
    }
}
