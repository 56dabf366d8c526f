package io.tqserve.backend.mlx;

import io.tqserve.backend.ComputeBackend;
import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.backend.mlx.ffm.MlxScope;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The one owner of the MLX device: every MLX call of the backend runs inside one of these methods, which hold the
 * device's fair lock for the call (the longest waiter goes next, so the two lanes alternate) and, for
 * {@link #call} and {@link #run}, a fresh {@link MlxScope} that is closed before the lock is released. No other
 * class takes the lock (ArchitectureRulesTest holds it). The lock is reentrant: a forward pass holds it through
 * {@link #hold} while the Java forward calls into the device caches.
 */
final class MlxDevice {
    private final Mlx mlx;
    private final ReentrantLock lock = new ReentrantLock(true);

    MlxDevice(Mlx mlx) {
        this.mlx = mlx;
    }

    /** Runs {@code work} on the device in a new scope and returns its result (arrays of the scope die with it). */
    <T> T call(Function<MlxScope, T> work) {
        lock.lock();
        try (MlxScope s = mlx.newScope()) {
            return work.apply(s);
        } finally {
            lock.unlock();
        }
    }

    /** As {@link #call}, for work without a result. */
    void run(Consumer<MlxScope> work) {
        lock.lock();
        try (MlxScope s = mlx.newScope()) {
            work.accept(s);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Runs {@code work} holding the device, without a scope: for work that frees MLX handles (stores, a pending
     * step's scope) or that opens a scope which outlives the call (a queued step).
     */
    <T> T held(Supplier<T> work) {
        lock.lock();
        try {
            return work.get();
        } finally {
            lock.unlock();
        }
    }

    /** As {@link #held(Supplier)}, for work without a result. */
    void heldRun(Runnable work) {
        lock.lock();
        try {
            work.run();
        } finally {
            lock.unlock();
        }
    }

    /** Takes the device until the guard is closed (the SPI's {@code lockDevice}: once per forward pass). */
    ComputeBackend.DeviceLock hold() {
        lock.lock();
        return lock::unlock;
    }
}
