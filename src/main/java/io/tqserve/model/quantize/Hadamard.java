package io.tqserve.model.quantize;

import java.util.SplittableRandom;

/**
 * A seeded randomized Hadamard rotation of the residual stream, {@code R = blockdiag(H_b)·diag(signs)/√b}: random
 * ±1 signs, then the normalized Walsh-Hadamard transform on consecutive blocks of b columns, b the largest power of
 * two dividing the width (the whole width when it is a power of two). R is orthogonal, so {@code Rᵀ} undoes it.
 * The fast transform is written out here (ten lines) rather than shared with the KV codec's, which works on
 * head vectors in another package with its own sign tables.
 */
public final class Hadamard {
    private final float[] signs;
    private final int block;

    public Hadamard(int dim, long seed) {
        this.block = Integer.lowestOneBit(dim);
        this.signs = new float[dim];
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < dim; i++) {
            signs[i] = r.nextBoolean() ? 1f : -1f;
        }
    }

    public int dim() {
        return signs.length;
    }

    /** v[off..off+dim) = R·v, in place. */
    public void apply(float[] v, int off) {
        for (int i = 0; i < signs.length; i++) {
            v[off + i] *= signs[i];
        }
        fwht(v, off);
    }

    /** v[off..off+dim) = Rᵀ·v, in place. */
    public void applyTransposed(float[] v, int off) {
        fwht(v, off);
        for (int i = 0; i < signs.length; i++) {
            v[off + i] *= signs[i];
        }
    }

    /** Normalized (orthonormal, symmetric) Walsh-Hadamard transform of each block; computed in double. */
    private void fwht(float[] v, int off) {
        double[] t = new double[block];
        double norm = 1.0 / Math.sqrt(block);
        for (int b = 0; b < signs.length; b += block) {
            for (int i = 0; i < block; i++) {
                t[i] = v[off + b + i];
            }
            for (int h = 1; h < block; h <<= 1) {
                for (int i = 0; i < block; i += h << 1) {
                    for (int j = i; j < i + h; j++) {
                        double x = t[j];
                        double y = t[j + h];
                        t[j] = x + y;
                        t[j + h] = x - y;
                    }
                }
            }
            for (int i = 0; i < block; i++) {
                v[off + b + i] = (float) (t[i] * norm);
            }
        }
    }
}
