package io.tqserve.kv.turbo;

/**
 * The two TurboQuant kernel implementations the parity tests compare, as {@code KernelParityTest} compares the
 * backend's: each test runs the same input through both and asserts bit-identical results.
 */
final class TurboParity {
    static final TurboKernels VEC = new VectorTurboKernels();
    static final TurboKernels SCA = new ScalarTurboKernels();

    private TurboParity() {
    }
}
