package io.tqserve.cli;

import io.tqserve.backend.ComputeBackend;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The two memory-bandwidth ceilings {@code bench decode} divides by, measured in the same run as the decode they
 * judge. The read bandwidth is the decode roofline: a decode step streams every weight byte once and writes almost
 * nothing, so its ceiling is how fast the kernel threads can read a buffer far larger than the last-level cache,
 * each thread its own contiguous slice as the matmuls split rows. The copy bandwidth (read + write, STREAM's Copy
 * convention, one thread) is printed beside it for comparison with earlier runs: it sits well below the read
 * ceiling on machines whose writes cost a read for ownership, which made a roofline fraction against it flattering.
 */
final class MemoryBandwidth {
    /** 1 GiB: about a 0.5B bf16 model's weights, 30x the last-level cache of a typical server core complex. */
    static final long READ_BYTES = 1L << 30;
    private static volatile long sink;

    private MemoryBandwidth() {
    }

    /**
     * GB/s of a streaming read of {@link #READ_BYTES} split over the backend's kernel threads (one contiguous slice
     * each, read sequentially with Vector API loads), best of 7 passes.
     */
    static double read(ComputeBackend backend) {
        int threads = Math.max(1, backend.threads());
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buf = arena.allocate(READ_BYTES, 4096);
            buf.fill((byte) 1); // every page touched (faulted in) before the clock starts
            long slice = READ_BYTES / threads / 4096 * 4096;
            long[] sums = new long[threads];
            double best = 0;
            for (int pass = 0; pass < 7; pass++) {
                long t0 = System.nanoTime();
                backend.parallelFor(threads, p -> {
                    long from = p * slice;
                    long to = p == threads - 1 ? READ_BYTES : from + slice;
                    sums[p] = vectorApi() ? Vec.read(buf, from, to) : readScalar(buf, from, to);
                });
                long t1 = System.nanoTime();
                best = Math.max(best, READ_BYTES / ((t1 - t0) / 1e9) / 1e9);
                for (long s : sums) {
                    sink += s;
                }
            }
            return best;
        }
    }

    private static boolean vectorApi() {
        return io.tqserve.backend.cpu.CpuBackend.vectorApiPresent();
    }

    /** The Vector API loop in its own class, loaded only when the module is present. */
    private static final class Vec {
        private static final VectorSpecies<Long> V = LongVector.SPECIES_PREFERRED;

        /** Four independent accumulators so the loads, not an add chain, bound the loop. */
        static long read(MemorySegment buf, long from, long to) {
            long step = V.vectorByteSize();
            LongVector a0 = LongVector.zero(V);
            LongVector a1 = LongVector.zero(V);
            LongVector a2 = LongVector.zero(V);
            LongVector a3 = LongVector.zero(V);
            for (long o = from; o + 4 * step <= to; o += 4 * step) {
                a0 = a0.add(LongVector.fromMemorySegment(V, buf, o, ByteOrder.LITTLE_ENDIAN));
                a1 = a1.add(LongVector.fromMemorySegment(V, buf, o + step, ByteOrder.LITTLE_ENDIAN));
                a2 = a2.add(LongVector.fromMemorySegment(V, buf, o + 2 * step, ByteOrder.LITTLE_ENDIAN));
                a3 = a3.add(LongVector.fromMemorySegment(V, buf, o + 3 * step, ByteOrder.LITTLE_ENDIAN));
            }
            return a0.add(a1).add(a2.add(a3)).reduceLanes(jdk.incubator.vector.VectorOperators.ADD);
        }
    }

    private static long readScalar(MemorySegment buf, long from, long to) {
        long s = 0;
        for (long o = from; o + 8 <= to; o += 8) {
            s += buf.get(ValueLayout.JAVA_LONG_UNALIGNED, o);
        }
        return s;
    }

    /**
     * GB/s of MemorySegment.copy over 512 MiB on the calling thread, counted as STREAM counts Copy (bytes read +
     * bytes written), best of 5.
     */
    static double copy() {
        long size = 512L << 20;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(size, 64);
            MemorySegment dst = arena.allocate(size, 64);
            src.fill((byte) 1);
            dst.fill((byte) 2);
            double best = 0;
            for (int i = 0; i < 5; i++) {
                long t0 = System.nanoTime();
                MemorySegment.copy(src, 0, dst, 0, size);
                long t1 = System.nanoTime();
                best = Math.max(best, 2.0 * size / ((t1 - t0) / 1e9) / 1e9);
            }
            return best;
        }
    }
}
