package io.tqserve.kv.turbo;

import java.lang.foreign.MemorySegment;

/** The scalar twins of {@link VectorTurboKernels}: plain Java, bit-identical to the Vector API kernels. */
final class ScalarTurboKernels implements TurboKernels {

    @Override
    public void transform(float[] x, int off, int d, float[] sigma, float s) {
        Fwht.transformScalar(x, off, d, sigma, s);
    }

    @Override
    public void rotate(float[] x, int off, int d, float[] sigma) {
        Fwht.rotateScalar(x, off, d, sigma);
    }

    @Override
    public void decodeKey(TurboLayout lay, MemorySegment src, long base, float[] out, int outOff) {
        KeyCodec.decodeScalar(lay, src, base, out, outOff);
    }

    @Override
    public void decodeValueRotated(TurboLayout lay, float[] centroids, MemorySegment src, long base, float[] out,
            int outOff) {
        ValueCodec.decodeRotatedScalar(lay, src, base, out, outOff);
    }

    @Override
    public void softmax(float[] x, int off, int n) {
        TurboSoftmax.scalar(x, off, n);
    }

    @Override
    public void scores(TurboBlockLayout lay, MemorySegment[] chunks, long headBase, int nT, float[] q, int qOff,
            int heads, float[] qsum, float[] sc, int scOff, int scStride, float scale, TurboAttention.Scratch s) {
        FusedScalar.scores(lay, chunks, headBase, nT, q, qOff, lay.headDim(), heads, qsum, sc, scOff, scStride, scale);
    }

    @Override
    public void values(TurboBlockLayout lay, MemorySegment[] chunks, long headBase, int nT, float[] w, int wOff,
            int wStride, int heads, float[] out, int outOff, TurboAttention.Scratch s) {
        int d = lay.headDim();
        FusedScalar.values(lay, chunks, headBase, nT, w, wOff, wStride, heads, out, outOff, d, s.codes(d));
    }

    @Override
    public void decodeKeys(TurboBlockLayout lay, MemorySegment[] chunks, long headBase, int nT, float[] kt, int stride,
            TurboAttention.Scratch s) {
        FusedScalar.decodeKeys(lay, chunks, headBase, nT, kt, stride);
    }
}
