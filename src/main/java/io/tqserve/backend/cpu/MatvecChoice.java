package io.tqserve.backend.cpu;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.atomic.LongAdder;

/**
 * Which kernel a {@link CpuBackend} runs for one-row bf16 matmuls on the packed layout (the decode step's weight
 * streaming): {@link VectorMatmul#matvec4Packed} at the species width, or on 512-bit machines
 * {@link HalfWidthMatvec} (the same bits from 256-bit halves). Set by {@value #PROPERTY}: {@code 512} or {@code 256}
 * fix the width, {@code auto} (the default) calibrates on the backend's first decode blocks once both kernels are
 * compiled: the blocks alternate kernels, each block's streaming rate is recorded, and after {@link #SAMPLES} blocks
 * per kernel the one with the higher median rate is kept for the backend's life and logged at INFO.
 *
 * <p>The calibration runs on real work, not at class loading: Vector API code runs thousands of times slower until
 * C2 compiles it, so a timing taken at startup before the first decode would measure the interpreter. Both kernels
 * give the same bits, so which one computed a block never shows in a result. The timed blocks are a few
 * milliseconds of decode work. Every block, calibrating or not, also adds its bytes and wall time to two counters
 * ({@link #blockTime}, two clock reads per block of rows) for {@code bench decode}'s account of a step.
 */
final class MatvecChoice {
    static final String PROPERTY = "tqserve.cpu.matvec-bits";
    /** Bytes each kernel streams before its blocks are timed: long enough for C2 to have compiled it. */
    static final long WARM_BYTES = 256L << 20;
    /** Timed blocks per kernel. */
    static final int SAMPLES = 64;

    /** The two implementations of the one-row packed kernel. */
    enum Kernel {
        /** {@link VectorMatmul#matvec4Packed} at the species width. */
        FULL,
        /** {@link HalfWidthMatvec#matvec4Packed}: 256-bit halves of the 512-bit arithmetic. */
        HALVES
    }

    private volatile Kernel chosen;
    /** Weight bytes streamed and nanoseconds spent inside blocks, summed over threads ({@link #blockTime}). */
    private final LongAdder blockBytes = new LongAdder();
    private final LongAdder blockNanos = new LongAdder();
    // calibration state, guarded by this
    private final long[] warmed = new long[2];
    private final double[][] rates = new double[2][SAMPLES];
    private final int[] taken = new int[2];
    private long turn;
    private String outcome;

    private MatvecChoice(Kernel fixed, String reason) {
        this.chosen = fixed;
        this.outcome = fixed == null ? null : describe(fixed) + " (" + reason + ")";
    }

    /** The choice for a setting value ({@code auto}, {@code 256}, {@code 512}; null means auto). */
    static MatvecChoice of(String setting) {
        String v = setting == null ? "auto" : setting.trim().toLowerCase(Locale.ROOT);
        boolean halves = HalfWidthMatvec.applies();
        int bits = VectorKernels.F.vectorBitSize();
        return switch (v) {
            case "auto" -> halves ? new MatvecChoice(null, "calibrating")
                    : new MatvecChoice(Kernel.FULL, "the only width at " + bits + "-bit vectors");
            case "512" -> {
                if (bits != 512) {
                    throw new IllegalArgumentException(PROPERTY + "=512 needs 512-bit vectors; this machine's Vector"
                            + " API species is " + bits + "-bit (use auto or " + bits + ")");
                }
                yield new MatvecChoice(Kernel.FULL, PROPERTY + "=512");
            }
            case "256" -> halves ? new MatvecChoice(Kernel.HALVES, PROPERTY + "=256")
                    : bits == 256 ? new MatvecChoice(Kernel.FULL, PROPERTY + "=256")
                    : fail(v, bits);
            default -> fail(v, bits);
        };
    }

    private static MatvecChoice fail(String v, int bits) {
        throw new IllegalArgumentException(PROPERTY + "=" + v + " is not supported: use auto, 256 or 512 (512 only"
                + " with 512-bit vectors; this machine's Vector API species is " + bits + "-bit)");
    }

    /** The choice the {@value #PROPERTY} system property asks for. */
    static MatvecChoice fromSystemProperty() {
        return of(System.getProperty(PROPERTY));
    }

    /** The kernel in use, or null while calibrating. */
    Kernel chosen() {
        return chosen;
    }

    /** What was chosen and why (measured rates when calibrated), or null while calibrating. */
    synchronized String outcome() {
        return outcome;
    }

    /** Output rows [from, to) (a multiple of 4 rows) of the packed matrix at {@code pack} (n columns) times x. */
    void run(MemorySegment pack, int n, float[] x, float[] out, int from, int to) {
        Kernel k = chosen;
        Kernel pick = k != null ? k : next();
        long t0 = System.nanoTime();
        loop(pick, pack, n, x, out, from, to);
        long nanos = System.nanoTime() - t0;
        long bytes = 2L * n * (to - from);
        blockBytes.add(bytes);
        blockNanos.add(nanos);
        if (k == null) {
            record(pick, bytes, nanos);
        }
    }

    /**
     * Weight bytes this kernel streamed and the wall nanoseconds spent inside its blocks, each summed over the
     * threads that ran them since the backend started: the kernel's own streaming rate, without the hand-offs and the
     * waits for the slowest thread around it ({@code bench decode}'s account of a step). Two clock reads per block
     * of rows (tens of kilobytes to megabytes of weights).
     */
    long[] blockTime() {
        return new long[] {blockBytes.sum(), blockNanos.sum()};
    }

    private static void loop(Kernel k, MemorySegment pack, int n, float[] x, float[] out, int from, int to) {
        if (k == Kernel.HALVES) {
            for (int j = from; j < to; j += 4) {
                HalfWidthMatvec.matvec4Packed(pack, 2L * j * n, n, x, 0, out, j);
            }
        } else {
            for (int j = from; j < to; j += 4) {
                VectorMatmul.matvec4Packed(pack, 2L * j * n, n, x, 0, out, j);
            }
        }
    }

    private synchronized Kernel next() {
        return (turn++ & 1) == 0 ? Kernel.FULL : Kernel.HALVES;
    }

    /** One block's bytes and nanoseconds on kernel k; decides once both kernels have {@link #SAMPLES} timings. */
    synchronized void record(Kernel k, long bytes, long nanos) {
        int i = k.ordinal();
        if (chosen != null || nanos <= 0) {
            return;
        }
        if (warmed[i] < WARM_BYTES) {
            warmed[i] += bytes;
            return;
        }
        if (taken[i] < SAMPLES) {
            rates[i][taken[i]++] = (double) bytes / nanos;
        }
        if (taken[0] == SAMPLES && taken[1] == SAMPLES) {
            double full = median(rates[0]);
            double halves = median(rates[1]);
            Kernel pick = halves > full ? Kernel.HALVES : Kernel.FULL;
            outcome = String.format(Locale.ROOT, "%s (calibrated: median block rate %.1f GB/s with 512-bit vectors,"
                    + " %.1f GB/s with 256-bit halves, %d blocks each; -D%s=256|512 fixes it)", describe(pick), full,
                    halves, SAMPLES, PROPERTY);
            chosen = pick;
            System.getLogger(MatvecChoice.class.getName()).log(System.Logger.Level.INFO,
                    "one-row bf16 kernel: " + outcome);
        }
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return (s[s.length / 2] + s[(s.length - 1) / 2]) / 2;
    }

    private static String describe(Kernel k) {
        return k == Kernel.HALVES ? "256-bit halves of the 512-bit arithmetic"
                : VectorKernels.F.vectorBitSize() + "-bit vectors";
    }
}
