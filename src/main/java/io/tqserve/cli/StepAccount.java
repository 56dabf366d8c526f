package io.tqserve.cli;

import io.tqserve.backend.cpu.CpuBackend;

/**
 * The second line of {@code bench decode}'s account of a CPU decode step: the weight matmuls' wall time split into
 * the time the one-row kernel spends inside its blocks of rows (its own streaming rate, per thread and over the
 * threads, as a fraction of the read bandwidth) and the rest (handing each matmul to the kernel threads, waiting for
 * the slowest one, matmuls not on the packed bf16 layout), with the number of hand-offs per step.
 */
final class StepAccount {
    private StepAccount() {
    }

    /**
     * @param kernel      the one-row kernel's bytes and thread-nanoseconds over the measured decode; null off the CPU
     * @param matmulMs    wall milliseconds per step inside weight matmuls
     * @param handoffs    calls that handed work to the kernel threads over the measured decode
     */
    static void printKernel(CpuBackend.KernelTime kernel, double matmulMs, long handoffs, int steps, int threads,
            double readGbs) {
        if (kernel == null || kernel.bytes() <= 0 || kernel.threadNanos() <= 0) {
            System.out.printf("  %.1f hand-offs to the kernel threads per step%n", (double) handoffs / steps);
            return;
        }
        double perThread = (double) kernel.bytes() / kernel.threadNanos(); // bytes per ns = GB/s
        double kernelMs = kernel.threadNanos() / 1e6 / steps / threads; // the blocks' time if no thread ever waited
        System.out.printf("  weight matmuls %.2f ms = the one-row kernel inside its blocks %.2f ms (%.1f GB/s per thread,"
                + " %.1f GB/s over %d threads, %.2f of the read bandwidth) + hand-offs, waits for the slowest thread"
                + " and other matmuls %.2f ms; %.1f hand-offs to the kernel threads per step%n", matmulMs, kernelMs,
                perThread, perThread * threads, threads, perThread * threads / readGbs, matmulMs - kernelMs,
                (double) handoffs / steps);
    }
}
