package io.tqserve.kv.turbo;

import java.lang.foreign.MemorySegment;

/**
 * The TurboQuant kernels — the FWHT rotation, entry decode, the softmax and the attention kernels over the block
 * layout — chosen once, as the CPU backend's {@code Kernels} are: {@link VectorTurboKernels} (Vector API) and its
 * scalar twin {@link ScalarTurboKernels} give bit-identical results, which the parity tests check by running both.
 * {@link #preferred()} is the Vector API unless {@code -Dtqserve.vector=false} or the module
 * {@code jdk.incubator.vector} is absent.
 */
interface TurboKernels {

    /** The kernels the codec and caches use: decided once per JVM. */
    static TurboKernels preferred() {
        return TurboSimd.KERNELS;
    }

    /** In place: butterflies over x[off, off+d), then ×s, then ×σ when sigma is not null (d a power of two). */
    void transform(float[] x, int off, int d, float[] sigma, float s);

    /** Encode rotation in place: x ← H·(x ⊙ σ). */
    void rotate(float[] x, int off, int d, float[] sigma);

    /** Inverse rotation in place, x ← (H·x) ⊙ σ, with the shared sign vector of head dim d. */
    default void unrotate(float[] x, int off, int d) {
        transform(x, off, d, TurboConstants.signsShared(d), TurboConstants.invSqrtN(d));
    }

    /** Key decode of the entry at src[base]: out[outOff+i] = fl32(fl32(code_i + zero_g)·scale_g). */
    void decodeKey(TurboLayout lay, MemorySegment src, long base, float[] out, int outOff);

    /** Rotated-domain value decode of the entry at src[base]: out[outOff+i] = fl32(c[code_i]·scale_g). */
    void decodeValueRotated(TurboLayout lay, float[] centroids, MemorySegment src, long base, float[] out, int outOff);

    /** Softmax in place over x[off, off+n) with {@link TurboSoftmax}'s reproducible exp. */
    void softmax(float[] x, int off, int n);

    /**
     * Fused scores of the first nT quantized tokens for query heads j < heads:
     * sc[scOff + j·scStride + t] = (q_j · key_t)·scale, with q_j = q[qOff + j·d, +d) and qsum[j·G + g] its group
     * sums ({@link FusedScores#scores}).
     */
    void scores(TurboBlockLayout lay, MemorySegment[] chunks, long headBase, int nT, float[] q, int qOff, int heads,
            float[] qsum, float[] sc, int scOff, int scStride, float scale, TurboAttention.Scratch s);

    /**
     * Fused weighted values (rotated domain) of the first nT quantized tokens for query heads j < heads
     * ({@link FusedValues#values}): out[outOff + j·d + i] = Σ_t c[code_t,i]·fl(w[wOff + j·wStride + t]·scale_t).
     */
    void values(TurboBlockLayout lay, MemorySegment[] chunks, long headBase, int nT, float[] w, int wOff, int wStride,
            int heads, float[] out, int outOff, TurboAttention.Scratch s);

    /** kt[i·stride + t] = key element i of token t, t < nT rounded up to whole blocks ({@link TurboWindow}). */
    void decodeKeys(TurboBlockLayout lay, MemorySegment[] chunks, long headBase, int nT, float[] kt, int stride,
            TurboAttention.Scratch s);
}
