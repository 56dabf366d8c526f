package io.tqserve.backend.mlx.ffm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * One {@code mlx_array} handle. The 8-byte struct lives in the arena of the {@link MlxScope} or
 * {@link MlxStore} that made it; closing the array calls {@code mlx_array_free} once (closing again is a
 * no-op), and closing its scope or store frees every array it still owns. The MLX array behind the handle is
 * reference counted by MLX: freeing a handle never invalidates another handle to the same data.
 */
public final class MlxArray implements AutoCloseable {
    private final Mlx mlx;
    private final MemorySegment struct; // mlx_array { void* ctx; }
    private boolean freed;

    MlxArray(Mlx mlx, MemorySegment struct) {
        this.mlx = mlx;
        this.struct = struct;
        mlx.arrayCreated();
    }

    /** The struct, for passing by value or as {@code mlx_array*}. */
    MemorySegment struct() {
        if (freed) {
            throw new IllegalStateException("MLX array used after close");
        }
        return struct;
    }

    public MlxDtype dtype() {
        try {
            return MlxDtype.ofC((int) mlx.n.arrayDtype.invokeExact(struct()));
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
    }

    public int ndim() {
        try {
            return (int) (long) mlx.n.arrayNdim.invokeExact(struct());
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
    }

    public int[] shape() {
        try {
            int nd = ndim();
            MemorySegment p = (MemorySegment) mlx.n.arrayShape.invokeExact(struct());
            if (nd == 0) {
                return new int[0];
            }
            return MlxErrors.checkPointer(p, "mlx_array_shape").reinterpret(4L * nd).toArray(ValueLayout.JAVA_INT);
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
    }

    /** Number of elements. */
    public long size() {
        try {
            return (long) mlx.n.arraySize.invokeExact(struct());
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
    }

    /** Makes this handle refer to {@code src}'s array ({@code mlx_array_set}); the previous one is released. */
    public void set(MlxArray src) {
        try {
            MlxErrors.check((int) mlx.n.arraySet.invokeExact(struct(), src.struct()), "mlx_array_set");
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
    }

    public boolean isClosed() {
        return freed;
    }

    @Override
    public void close() {
        if (freed) {
            return;
        }
        freed = true;
        mlx.arrayFreed();
        try {
            MlxErrors.check((int) mlx.n.arrayFree.invokeExact(struct), "mlx_array_free");
        } catch (Throwable t) {
            throw MlxErrors.rethrow(t);
        }
    }
}
