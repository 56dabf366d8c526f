package io.tqserve.kv.turbo;

import java.lang.foreign.MemorySegment;

/**
 * The Vector API TurboQuant kernels ({@link VectorFwht}, {@link VectorDecode}, {@link FusedScores},
 * {@link FusedValues}, {@link TurboWindow}, {@link TurboSoftmax}). The attention kernels handle vectors of 8 or 16
 * float lanes ({@link FusedScores#SUPPORTED}); at other widths they run the scalar twins, as the FWHT and decode
 * kernels do for the widths they do not handle, so an instance is correct on every machine.
 */
final class VectorTurboKernels implements TurboKernels {
    private static final TurboKernels SCALAR = new ScalarTurboKernels();
    private static final int T = TurboBlockLayout.TOKENS;

    @Override
    public void transform(float[] x, int off, int d, float[] sigma, float s) {
        VectorFwht.transform(x, off, d, sigma, s);
    }

    @Override
    public void rotate(float[] x, int off, int d, float[] sigma) {
        VectorFwht.rotate(x, off, d, sigma);
    }

    @Override
    public void decodeKey(TurboLayout lay, MemorySegment src, long base, float[] out, int outOff) {
        VectorDecode.decodeKey(lay, src, base, out, outOff);
    }

    @Override
    public void decodeValueRotated(TurboLayout lay, float[] centroids, MemorySegment src, long base, float[] out,
            int outOff) {
        VectorDecode.decodeValueRotated(lay, centroids, src, base, out, outOff);
    }

    @Override
    public void softmax(float[] x, int off, int n) {
        if (FusedScores.SUPPORTED) {
            TurboSoftmax.vector(x, off, n);
        } else {
            TurboSoftmax.scalar(x, off, n);
        }
    }

    @Override
    public void scores(TurboBlockLayout lay, MemorySegment[] chunks, long headBase, int nT, float[] q, int qOff,
            int heads, float[] qsum, float[] sc, int scOff, int scStride, float scale, TurboAttention.Scratch s) {
        if (!FusedScores.SUPPORTED) {
            SCALAR.scores(lay, chunks, headBase, nT, q, qOff, heads, qsum, sc, scOff, scStride, scale, s);
            return;
        }
        int d = lay.headDim();
        float[] qb = s.qb(heads * d * FusedScores.L);
        FusedScores.broadcastQueries(q, qOff, d, heads, d, qb);
        FusedScores.scores(lay, chunks, headBase, nT, qb, heads, qsum, sc, scOff, scStride, scale, s.kf(d * T));
    }

    @Override
    public void values(TurboBlockLayout lay, MemorySegment[] chunks, long headBase, int nT, float[] w, int wOff,
            int wStride, int heads, float[] out, int outOff, TurboAttention.Scratch s) {
        if (!FusedScores.SUPPORTED) {
            SCALAR.values(lay, chunks, headBase, nT, w, wOff, wStride, heads, out, outOff, s);
            return;
        }
        int d = lay.headDim();
        FusedValues.values(lay, chunks, headBase, nT, w, wOff, wStride, heads, out, outOff, d, s.row(d), s.codes(d));
    }

    @Override
    public void decodeKeys(TurboBlockLayout lay, MemorySegment[] chunks, long headBase, int nT, float[] kt, int stride,
            TurboAttention.Scratch s) {
        if (!FusedScores.SUPPORTED) {
            SCALAR.decodeKeys(lay, chunks, headBase, nT, kt, stride, s);
            return;
        }
        TurboWindow.decodeKeys(lay, chunks, headBase, nT, kt, stride, s.kf(lay.headDim() * T));
    }
}
