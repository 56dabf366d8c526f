package io.tqserve.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.junit.jupiter.api.Test;

/** The spinning barrier of {@link KernelPool}: every index exactly once, failures surfaced, callers never mixed. */
class KernelPoolTest {

    @Test
    void everyIndexRunsExactlyOnceOverManyBackToBackTasks() {
        try (KernelPool pool = new KernelPool(3)) {
            for (int round = 0; round < 5_000; round++) {
                int n = 1 + round % 37;
                AtomicIntegerArray hits = new AtomicIntegerArray(n);
                pool.parallelFor(n, hits::incrementAndGet);
                for (int i = 0; i < n; i++) {
                    assertEquals(1, hits.get(i), "round " + round + " index " + i);
                }
            }
        }
    }

    @Test
    void writesOfTheWorkersAreVisibleToTheCallerAfterParkedWorkersWakeUp() throws InterruptedException {
        try (KernelPool pool = new KernelPool(2)) {
            for (int round = 0; round < 5; round++) {
                Thread.sleep(2); // longer than the spin: the worker has parked and must be unparked
                long[] out = new long[64];
                pool.parallelFor(out.length, i -> out[i] = (long) i * i);
                long[] want = new long[64];
                for (int i = 0; i < want.length; i++) {
                    want[i] = (long) i * i;
                }
                assertArrayEquals(want, out);
            }
        }
    }

    @Test
    void aFailureReachesTheCallerAndThePoolKeepsWorking() {
        try (KernelPool pool = new KernelPool(2)) {
            IllegalArgumentException boom = new IllegalArgumentException("boom");
            IllegalArgumentException thrown = assertThrows(IllegalArgumentException.class, () -> pool.parallelFor(100,
                    i -> {
                        if (i == 57) {
                            throw boom;
                        }
                    }));
            assertSame(boom, thrown);
            AtomicIntegerArray hits = new AtomicIntegerArray(100);
            pool.parallelFor(100, hits::incrementAndGet);
            for (int i = 0; i < 100; i++) {
                assertEquals(1, hits.get(i));
            }
        }
    }

    @Test
    void concurrentCallersEachGetAllTheirIndices() throws Exception {
        try (KernelPool pool = new KernelPool(2)) {
            int callers = 3;
            Throwable[] errors = new Throwable[callers];
            CountDownLatch start = new CountDownLatch(1);
            Thread[] ts = new Thread[callers];
            for (int c = 0; c < callers; c++) {
                int id = c;
                ts[c] = new Thread(() -> {
                    try {
                        start.await();
                        for (int round = 0; round < 3_000; round++) {
                            int n = 1 + (round + id) % 23;
                            AtomicIntegerArray hits = new AtomicIntegerArray(n);
                            pool.parallelFor(n, hits::incrementAndGet);
                            for (int i = 0; i < n; i++) {
                                if (hits.get(i) != 1) {
                                    throw new AssertionError("caller " + id + " round " + round + " index " + i
                                            + " ran " + hits.get(i) + " times");
                                }
                            }
                        }
                    } catch (Throwable t) {
                        errors[id] = t;
                    }
                });
                ts[c].start();
            }
            start.countDown();
            for (Thread t : ts) {
                t.join();
            }
            for (Throwable t : errors) {
                if (t != null) {
                    throw new AssertionError(t);
                }
            }
        }
    }

    @Test
    void aClosedPoolRunsTasksOnTheCaller() {
        KernelPool pool = new KernelPool(2);
        pool.close();
        AtomicIntegerArray hits = new AtomicIntegerArray(10);
        pool.parallelFor(10, hits::incrementAndGet);
        for (int i = 0; i < 10; i++) {
            assertEquals(1, hits.get(i));
        }
    }
}
