package io.tqserve.kv.turbo;

/**
 * The normalised fast Walsh–Hadamard transform of the TurboQuant value path (spec §4): Sylvester (natural) order,
 * stages h = 1, 2, 4, … each replacing (x[j], x[j+h]) by (a+b, a−b) rounded to float32, then one multiply by
 * float32(1/√d). It is orthonormal and its own inverse. Written by hand because no maintained Java library
 * reproduces this exact butterfly order, which the golden vectors pin bit for bit.
 *
 * <p>This class holds the scalar code ({@code *Scalar}), which {@link VectorFwht} matches bit for bit; the plain
 * methods run the {@linkplain TurboKernels#preferred() preferred} kernels.
 */
public final class Fwht {
    private Fwht() {
    }

    /** In place: x[off, off+d) ← H·x, d in {64, 128, 256, 512}. */
    public static void transform(float[] x, int off, int d) {
        TurboKernels.preferred().transform(x, off, d, null, TurboConstants.invSqrtN(d));
    }

    /** Encode rotation in place: x ← H·(x ⊙ σ). */
    public static void rotate(float[] x, int off, int d) {
        TurboKernels.preferred().rotate(x, off, d, TurboConstants.signsShared(d));
    }

    /**
     * Inverse rotation in place: x ← (H·x) ⊙ σ. Turns a rotated-domain value (or a weighted sum of them, as
     * attention accumulates) back into the original domain.
     */
    public static void unrotate(float[] x, int off, int d) {
        TurboKernels.preferred().unrotate(x, off, d);
    }

    static void rotateScalar(float[] x, int off, int d, float[] sigma) {
        for (int i = 0; i < d; i++) {
            x[off + i] *= sigma[i];
        }
        transformScalar(x, off, d, null, TurboConstants.invSqrtN(d));
    }

    /** Butterflies, then ×s, then ×σ (when sigma is not null); σ is ±1 so the last product is exact. */
    static void transformScalar(float[] x, int off, int d, float[] sigma, float s) {
        checkLength(x, off, d);
        for (int h = 1; h < d; h <<= 1) {
            for (int j = 0; j < d; j += h << 1) {
                for (int k = off + j, end = off + j + h; k < end; k++) {
                    float a = x[k];
                    float b = x[k + h];
                    x[k] = a + b;
                    x[k + h] = a - b;
                }
            }
        }
        if (sigma == null) {
            for (int i = 0; i < d; i++) {
                x[off + i] *= s;
            }
        } else {
            for (int i = 0; i < d; i++) {
                x[off + i] = x[off + i] * s * sigma[i];
            }
        }
    }

    static void checkLength(float[] x, int off, int d) {
        if (d < 1 || Integer.bitCount(d) != 1) {
            throw new IllegalArgumentException("FWHT length must be a power of two, got " + d);
        }
        if (off < 0 || off + d > x.length) {
            throw new IndexOutOfBoundsException("FWHT range [" + off + ", " + (off + d) + ") outside array of " + x.length);
        }
    }
}
