package io.tqserve.kv.turbo;

/**
 * Whether the codec's kernels use the Vector API, decided once: off with {@code -Dtqserve.vector=false} or when the
 * module {@code jdk.incubator.vector} is not in the boot layer. Both choices give bit-identical results.
 */
final class TurboSimd {
    /** The project-wide switch, shared with the CPU backend. */
    static final String PROPERTY = "tqserve.vector";

    static final boolean ENABLED = !"false".equalsIgnoreCase(System.getProperty(PROPERTY, "true"))
            && ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent();

    /** The kernels {@link TurboKernels#preferred()} returns. */
    static final TurboKernels KERNELS = ENABLED ? new VectorTurboKernels() : new ScalarTurboKernels();

    private TurboSimd() {
    }
}
