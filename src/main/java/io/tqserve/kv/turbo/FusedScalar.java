package io.tqserve.kv.turbo;

import java.lang.foreign.MemorySegment;

/**
 * Scalar twins of {@link FusedScores}, {@link FusedValues} and {@link TurboWindow#decodeKeys}: the same arithmetic
 * per token and element in the same order (Math.fma where the vector code uses fma), so results are bit-identical.
 * Used with {@code -Dtqserve.vector=false}, on machines whose vectors have neither 8 nor 16 float lanes, and by the
 * parity tests.
 */
final class FusedScalar {
    private static final int T = TurboBlockLayout.TOKENS;
    private static final int CHUNK = TurboQuantKvCache.CHUNK;

    private FusedScalar() {
    }

    /** Twin of {@link FusedScores#scores}, reading the queries unbroadcast: q[qOff + j·qStride + i]. */
    static void scores(TurboBlockLayout lay, MemorySegment[] chunks, long headBase, int nT, float[] q, int qOff,
            int qStride, int heads, float[] qsum, float[] sc, int scOff, int scStride, float scale) {
        int groups = lay.groups();
        int blockBytes = lay.bytes();
        for (int t = 0; t < nT; t++) {
            MemorySegment seg = chunks[t / CHUNK];
            long blk = headBase + (long) (t % CHUNK / T) * blockBytes;
            int lane = t % T;
            for (int j = 0; j < heads; j++) {
                int qj = qOff + j * qStride;
                float s = 0f;
                for (int g = 0; g < groups; g++) {
                    float p0 = 0f;
                    float p1 = 0f;
                    float p2 = 0f;
                    float p3 = 0f;
                    for (int m = 0; m < 8; m++) {
                        int e = g * 32 + 4 * m;
                        p0 = Math.fma((float) lay.keyCode(seg, blk, e, lane), q[qj + e], p0);
                        p1 = Math.fma((float) lay.keyCode(seg, blk, e + 1, lane), q[qj + e + 1], p1);
                        p2 = Math.fma((float) lay.keyCode(seg, blk, e + 2, lane), q[qj + e + 2], p2);
                        p3 = Math.fma((float) lay.keyCode(seg, blk, e + 3, lane), q[qj + e + 3], p3);
                    }
                    float a = (p0 + p1) + (p2 + p3);
                    float inner = Math.fma(lay.keyZero(seg, blk, g, lane), qsum[j * groups + g], a);
                    s = Math.fma(lay.keyScale(seg, blk, g, lane), inner, s);
                }
                sc[scOff + j * scStride + t] = s * scale;
            }
        }
    }

    /** Twin of {@link FusedValues#values}. */
    static void values(TurboBlockLayout lay, MemorySegment[] chunks, long headBase, int nT, float[] w, int wOff,
            int wStride, int heads, float[] out, int outOff, int outStride, int[] codes) {
        int d = lay.headDim();
        int bits = lay.entry().vBits();
        int blockBytes = lay.bytes();
        float[] c = TurboConstants.centroidsShared(bits);
        for (int j = 0; j < heads; j++) {
            java.util.Arrays.fill(out, outOff + j * outStride, outOff + j * outStride + d, 0f);
        }
        for (int t = 0; t < nT; t++) {
            MemorySegment seg = chunks[t / CHUNK];
            int tc = t % CHUNK;
            long e = headBase + (long) (tc / T) * blockBytes + lay.valueEntryOffset(tc % T);
            CodePacking.unpack(seg, e, bits, false, codes, 0, d);
            for (int j = 0; j < heads; j++) {
                float wt = w[wOff + j * wStride + t];
                int o = outOff + j * outStride;
                for (int i = 0; i < d; i++) {
                    out[o + i] = Math.fma(c[codes[i]], wt * lay.valueScale(seg, e, i / 32), out[o + i]);
                }
            }
        }
    }

    /** Twin of {@link TurboWindow#decodeKeys}: kt[i·stride + t] = fl(fl(code + zero)·scale). */
    static void decodeKeys(TurboBlockLayout lay, MemorySegment[] chunks, long headBase, int nT, float[] kt, int stride) {
        int d = lay.headDim();
        int blockBytes = lay.bytes();
        for (int t = 0; t < nT; t++) {
            MemorySegment seg = chunks[t / CHUNK];
            long blk = headBase + (long) (t % CHUNK / T) * blockBytes;
            int lane = t % T;
            for (int i = 0; i < d; i++) {
                int g = i / 32;
                kt[i * stride + t] = ((float) lay.keyCode(seg, blk, i, lane) + lay.keyZero(seg, blk, g, lane))
                        * lay.keyScale(seg, blk, g, lane);
            }
        }
    }
}
