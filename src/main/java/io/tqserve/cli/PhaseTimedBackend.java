package io.tqserve.cli;

import io.tqserve.backend.ComputeBackend;
import io.tqserve.backend.Kernels;
import io.tqserve.backend.Matrix;
import java.util.Collection;
import java.util.function.IntConsumer;

/**
 * A CPU backend that times what the forward pass asks of it, for {@code bench decode}'s account of where a decode
 * step goes: wall time inside weight matmuls (with the weight bytes they read), inside the other parallel work
 * (attention, SwiGLU), and — by difference from the step time — everything the lane thread does alone (norms, RoPE,
 * residual adds). Single caller (the benchmark's thread); the numbers are the caller's wall time, so a matmul's
 * share includes handing it to the kernel threads and waiting for the slowest.
 */
final class PhaseTimedBackend implements ComputeBackend {
    private final ComputeBackend inner;
    long matmulNanos;
    /** CPU time inside weight matmuls, counted while {@link #cpu} is set (ns). */
    long matmulCpuNanos;
    /** The threads whose CPU time a matmul is charged ({@code bench speculative --account}); null: wall time only. */
    CpuClock cpu;
    long matmulBytes;
    long parallelNanos;
    /** Calls that hand work to the kernel threads: matmul, matmuls, parallelFor. */
    long handoffs;

    PhaseTimedBackend(ComputeBackend inner) {
        this.inner = inner;
    }

    void reset() {
        matmulNanos = 0;
        matmulCpuNanos = 0;
        matmulBytes = 0;
        parallelNanos = 0;
        handoffs = 0;
    }

    @Override
    public String name() {
        return inner.name();
    }

    @Override
    public String describe() {
        return inner.describe();
    }

    @Override
    public Kernels kernels() {
        return inner.kernels();
    }

    @Override
    public int threads() {
        return inner.threads();
    }

    @Override
    public void matmul(Matrix w, float[] x, int rows, float[] out) {
        long c0 = cpu == null ? 0 : cpu.nanos();
        long t0 = System.nanoTime();
        inner.matmul(w, x, rows, out);
        matmulNanos += System.nanoTime() - t0;
        matmulCpuNanos += cpu == null ? 0 : cpu.nanos() - c0;
        matmulBytes += w.byteSize();
        handoffs++;
    }

    @Override
    public void matmuls(Matrix[] ws, float[] x, int rows, float[][] outs) {
        long c0 = cpu == null ? 0 : cpu.nanos();
        long t0 = System.nanoTime();
        inner.matmuls(ws, x, rows, outs);
        matmulNanos += System.nanoTime() - t0;
        matmulCpuNanos += cpu == null ? 0 : cpu.nanos() - c0;
        handoffs++;
        for (Matrix w : ws) {
            matmulBytes += w.byteSize();
        }
    }

    @Override
    public void prepare(Collection<Matrix> weights) {
        inner.prepare(weights);
    }

    @Override
    public void parallelFor(int n, IntConsumer body) {
        long t0 = System.nanoTime();
        inner.parallelFor(n, body);
        parallelNanos += System.nanoTime() - t0;
        handoffs++;
    }

    @Override
    public void close() {
        // the benchmark closes the backend it wrapped
    }
}
