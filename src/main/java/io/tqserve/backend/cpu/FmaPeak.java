package io.tqserve.backend.cpu;

import io.tqserve.backend.ComputeBackend;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The machine's f32 multiply-add peak as the Vector API reaches it: every kernel thread runs {@link #CHAINS}
 * independent chains of {@code a = a·m + c} on vectors of the preferred species, in registers (no memory traffic),
 * enough chains to cover the multiply-add latency on two pipes. {@code bench decode} prints it so a prefill's
 * GFLOP/s can be read as a fraction of it. The Vector API emits only f32 FMAs here: AVX512_BF16's
 * {@code vdpbf16ps} (two bf16 products per f32 lane, which llama.cpp's bf16 GEMM uses where the CPU has it) has no
 * Vector API operation, so this is the ceiling of any Java GEMM on bf16 weights. Scalar twin: {@link #chainsScalar}.
 */
public final class FmaPeak {
    /** Independent chains per thread: 12 vectors, which with the two operands fit AVX2's 16 registers. */
    static final int CHAINS = 12;
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;

    private FmaPeak() {
    }

    /**
     * Best of five timings of {@code iters} steps on every thread of the backend's pool at once, in GFLOP/s (two
     * flops per lane and multiply-add).
     */
    public static double measure(ComputeBackend backend, int iters) {
        int threads = backend.threads();
        float[] sink = new float[threads];
        double best = 0;
        for (int round = 0; round < 6; round++) { // round 0 compiles the loop
            long t0 = System.nanoTime();
            backend.parallelFor(threads, t -> sink[t] = chains(iters, 1f + t));
            long ns = System.nanoTime() - t0;
            if (round > 0) {
                best = Math.max(best, 2.0 * CHAINS * F.length() * iters * threads / ns);
            }
        }
        if (Float.isNaN(sink[0])) { // keeps the results alive
            throw new IllegalStateException();
        }
        return best;
    }

    /**
     * {@link #CHAINS} chains of {@code a = a·m + c} over {@code iters} steps; returns the sum of the chains in lane 0
     * (every lane holds the same values; summing the lanes and dividing by their count would round differently at 8
     * and 16 lanes).
     */
    static float chains(int iters, float seed) {
        FloatVector m = FloatVector.broadcast(F, 0.9999999f);
        FloatVector c = FloatVector.broadcast(F, 1e-7f);
        FloatVector a0 = FloatVector.broadcast(F, seed), a1 = FloatVector.broadcast(F, seed + 1);
        FloatVector a2 = FloatVector.broadcast(F, seed + 2), a3 = FloatVector.broadcast(F, seed + 3);
        FloatVector a4 = FloatVector.broadcast(F, seed + 4), a5 = FloatVector.broadcast(F, seed + 5);
        FloatVector a6 = FloatVector.broadcast(F, seed + 6), a7 = FloatVector.broadcast(F, seed + 7);
        FloatVector a8 = FloatVector.broadcast(F, seed + 8), a9 = FloatVector.broadcast(F, seed + 9);
        FloatVector a10 = FloatVector.broadcast(F, seed + 10), a11 = FloatVector.broadcast(F, seed + 11);
        for (int i = 0; i < iters; i++) {
            a0 = a0.fma(m, c);
            a1 = a1.fma(m, c);
            a2 = a2.fma(m, c);
            a3 = a3.fma(m, c);
            a4 = a4.fma(m, c);
            a5 = a5.fma(m, c);
            a6 = a6.fma(m, c);
            a7 = a7.fma(m, c);
            a8 = a8.fma(m, c);
            a9 = a9.fma(m, c);
            a10 = a10.fma(m, c);
            a11 = a11.fma(m, c);
        }
        FloatVector s = a0.add(a1).add(a2).add(a3).add(a4).add(a5).add(a6).add(a7).add(a8).add(a9).add(a10).add(a11);
        return s.lane(0);
    }

    /** The scalar twin of {@link #chains}: the same chains on one lane (every lane holds the same values). */
    static float chainsScalar(int iters, float seed) {
        float[] a = new float[CHAINS];
        for (int k = 0; k < CHAINS; k++) {
            a[k] = seed + k;
        }
        for (int i = 0; i < iters; i++) {
            for (int k = 0; k < CHAINS; k++) {
                a[k] = Math.fma(a[k], 0.9999999f, 1e-7f);
            }
        }
        float s = a[0];
        for (int k = 1; k < CHAINS; k++) {
            s += a[k];
        }
        return s;
    }
}
