package io.tqserve.backend.mlx.ffm;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.util.ArrayList;
import java.util.List;

/**
 * Long-lived array handles (weights, KV caches) in a shared arena. A store never runs operations (those need a
 * thread's stream, so they run in an {@link MlxScope}); it keeps handles to arrays a scope computed and frees
 * them all on {@link #close}.
 */
public final class MlxStore implements AutoCloseable {
    private final Mlx mlx;
    private final Arena arena = Arena.ofShared();
    private final List<MlxArray> owned = new ArrayList<>();
    private boolean closed;

    MlxStore(Mlx mlx) {
        this.mlx = mlx;
    }

    /** A new handle, owned by this store, to the same MLX array as {@code a} (which its scope may then free). */
    public synchronized MlxArray keep(MlxArray a) {
        MlxArray h = empty();
        h.set(a);
        return h;
    }

    /** A new empty handle (ctx NULL), to be {@link MlxArray#set} later. */
    public synchronized MlxArray empty() {
        if (closed) {
            throw new IllegalStateException("MLX store is closed");
        }
        try {
            MlxArray h = new MlxArray(mlx, (MemorySegment) mlx.n.arrayNew.invokeExact((SegmentAllocator) arena));
            owned.add(h);
            return h;
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
    }

    /** Frees every handle. Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        RuntimeException first = null;
        for (MlxArray a : owned) {
            try {
                a.close();
            } catch (RuntimeException e) {
                first = first == null ? e : first;
            }
        }
        owned.clear();
        arena.close();
        if (first != null) {
            throw first;
        }
    }
}
