package io.tqserve.backend.cpu;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntConsumer;

/**
 * A dedicated pool of daemon threads ("tqserve-kernel-N") for splitting kernel work. The caller's thread takes
 * part, so a pool of {@code threads} runs {@code threads - 1} workers. Never the common ForkJoinPool, never the
 * Netty event loop. Bodies must not call {@link #parallelFor} again (no nesting).
 *
 * <p>A decode step hands work to the pool a hundred times or more (every projection of every layer, attention,
 * SwiGLU), each task a fraction of a millisecond on a small model. Handing it over through an executor queue and a
 * latch costs a park and an unpark per task, tens of microseconds each on a busy machine, so the pool is its own
 * barrier instead: a task is published by bumping a generation counter that the workers watch, spinning for
 * {@link #SPIN_NANOS} after their last task before they park, and the caller likewise spins briefly for the
 * workers to check in before it parks. Between the tasks of a step the workers are still spinning and pick the
 * next one up within a microsecond; an idle pool parks and costs nothing.
 *
 * <p>One caller at a time owns the workers; a second caller that finds them busy (another lane's pass) runs its
 * body on its own thread rather than wait. Which thread computes an index never changes its result.
 */
final class KernelPool implements AutoCloseable {
    /** How long a worker spins for the next task, and the caller for the workers, before parking. */
    static final long SPIN_NANOS = 50_000;

    private final int threads;
    private final Thread[] workers;
    private final ReentrantLock owner = new ReentrantLock();

    // The published task: written by the owning caller before it bumps generation, read by workers after.
    private IntConsumer body;
    private int n;
    private final AtomicInteger next = new AtomicInteger();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    /** Workers that have not yet finished the current generation. */
    private final AtomicInteger pending = new AtomicInteger();
    private volatile long generation;
    private volatile boolean closed;
    private volatile Thread waitingCaller;
    /** 1 while worker w is (about to be) parked: the caller unparks exactly those. */
    private final AtomicIntegerArray parked;

    KernelPool(int threads) {
        this.threads = Math.max(1, threads);
        this.workers = new Thread[this.threads - 1];
        this.parked = new AtomicIntegerArray(workers.length);
        for (int w = 0; w < workers.length; w++) {
            int id = w;
            Thread t = new Thread(() -> work(id), "tqserve-kernel-" + (w + 1));
            t.setDaemon(true);
            workers[w] = t;
            t.start();
        }
    }

    int threads() {
        return threads;
    }

    void parallelFor(int n, IntConsumer body) {
        if (n <= 0) {
            return;
        }
        if (workers.length == 0 || n == 1 || closed || !owner.tryLock()) {
            for (int i = 0; i < n; i++) {
                body.accept(i);
            }
            return;
        }
        try {
            this.body = body;
            this.n = n;
            next.set(0);
            failure.set(null);
            pending.set(workers.length);
            generation = generation + 1; // publishes the fields above to the workers
            for (int w = 0; w < workers.length; w++) {
                if (parked.get(w) != 0) {
                    LockSupport.unpark(workers[w]);
                }
            }
            drain(body, n);
            awaitWorkers();
            this.body = null; // no reference to the caller's arrays past the call
            Throwable t = failure.get();
            if (t instanceof RuntimeException re) {
                throw re;
            }
            if (t instanceof Error e) {
                throw e;
            }
            if (t != null) {
                throw new IllegalStateException(t);
            }
        } finally {
            owner.unlock();
        }
    }

    private void drain(IntConsumer body, int n) {
        int i;
        while (failure.get() == null && (i = next.getAndIncrement()) < n) {
            try {
                body.accept(i);
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            }
        }
    }

    /** Waits until every worker finished the current generation: spins, then parks (interrupts are kept). */
    private void awaitWorkers() {
        long start = System.nanoTime();
        while (pending.get() != 0) {
            if (System.nanoTime() - start < SPIN_NANOS) {
                Thread.onSpinWait();
                continue;
            }
            waitingCaller = Thread.currentThread();
            if (pending.get() != 0) {
                LockSupport.park(this); // the workers still write into the caller's arrays: never give up
            }
            waitingCaller = null;
        }
    }

    private void work(int id) {
        long seen = 0;
        while (true) {
            long g = awaitGeneration(id, seen);
            if (closed) {
                return;
            }
            seen = g;
            IntConsumer b = body;
            int count = n;
            drain(b, count);
            if (pending.decrementAndGet() == 0) {
                Thread caller = waitingCaller;
                if (caller != null) {
                    LockSupport.unpark(caller);
                }
            }
        }
    }

    /** Spins for a generation newer than {@code seen}, then parks until the caller unparks this worker. */
    private long awaitGeneration(int id, long seen) {
        long start = System.nanoTime();
        int spins = 0;
        while (true) {
            long g = generation;
            if (g != seen || closed) {
                return g;
            }
            if (++spins < 64 || System.nanoTime() - start < SPIN_NANOS) {
                Thread.onSpinWait();
                continue;
            }
            parked.set(id, 1);
            if (generation == seen && !closed) {
                LockSupport.park(this);
            }
            parked.set(id, 0);
        }
    }

    @Override
    public void close() {
        closed = true;
        for (Thread t : workers) {
            LockSupport.unpark(t);
        }
    }
}
