package io.tqserve.backend.cpu;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntConsumer;

/**
 * A dedicated pool of daemon threads ("tqserve-kernel-N") for splitting kernel work. The caller's thread takes
 * part, so a pool of {@code threads} runs {@code threads - 1} workers. Never the common ForkJoinPool, never the
 * Netty event loop. Bodies must not call {@link #parallelFor} again (no nesting).
 */
final class KernelPool implements AutoCloseable {
    private final int threads;
    private final ExecutorService workers;

    KernelPool(int threads) {
        this.threads = Math.max(1, threads);
        AtomicInteger n = new AtomicInteger();
        this.workers = this.threads == 1 ? null : Executors.newFixedThreadPool(this.threads - 1, r -> {
            Thread t = new Thread(r, "tqserve-kernel-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
    }

    int threads() {
        return threads;
    }

    void parallelFor(int n, IntConsumer body) {
        if (n <= 0) {
            return;
        }
        int helpers = Math.min(threads - 1, n - 1);
        if (helpers <= 0) {
            for (int i = 0; i < n; i++) {
                body.accept(i);
            }
            return;
        }
        AtomicInteger next = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch done = new CountDownLatch(helpers);
        Runnable drain = () -> {
            int i;
            while (failure.get() == null && (i = next.getAndIncrement()) < n) {
                try {
                    body.accept(i);
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
            }
        };
        for (int h = 0; h < helpers; h++) {
            workers.execute(() -> {
                try {
                    drain.run();
                } finally {
                    done.countDown();
                }
            });
        }
        drain.run();
        boolean interrupted = false;
        while (true) {
            try {
                done.await();
                break;
            } catch (InterruptedException e) {
                interrupted = true; // finish waiting: the helpers still write into the caller's arrays
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
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
    }

    @Override
    public void close() {
        if (workers != null) {
            workers.shutdownNow();
        }
    }
}
