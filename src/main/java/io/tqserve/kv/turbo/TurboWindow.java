package io.tqserve.kv.turbo;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * Dequantize-on-fetch of a window of {@link TurboBlockLayout} blocks into floats, for the
 * {@link AttentionPath#DEQUANT} and {@link AttentionPath#DEFERRED} paths: keys into a transposed window (element-major,
 * as the codec decodes them: fl(fl(code + zero)·scale)), values per token through the codec's decode.
 */
final class TurboWindow {
    private static final VectorSpecies<Float> F = FusedScores.F;
    private static final int L = FusedScores.L;
    private static final VectorSpecies<Integer> I = VectorSpecies.of(int.class, F.vectorShape());
    private static final VectorSpecies<Byte> B = VectorSpecies.of(byte.class, VectorShape.forBitSize(Math.max(64, L * 8)));
    private static final VectorSpecies<Short> S =
            VectorSpecies.of(short.class, VectorShape.forBitSize(Math.max(64, L * 16)));
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
    private static final int T = TurboBlockLayout.TOKENS;
    private static final int BLOCKS = TurboQuantKvCache.CHUNK / T;
    private static final int CHUNK = TurboQuantKvCache.CHUNK;

    private TurboWindow() {
    }

    /**
     * kt[i·stride + t] = key element i of token t, for t < nT rounded up to whole blocks (stride must allow that);
     * Vector API (needs {@link FusedScores#SUPPORTED}); twin {@link FusedScalar#decodeKeys}.
     */
    static void decodeKeys(TurboBlockLayout lay, MemorySegment[] chunks, long headBase, int nT, float[] kt, int stride,
            float[] kf) {
        int groups = lay.groups();
        int d = lay.headDim();
        int blockBytes = lay.bytes();
        boolean k8 = lay.entry().kBits() == 8 && lay.entry().keyQuant().signed();
        long ks = lay.keyScalesOffset();
        long kz = lay.keyZerosOffset();
        for (int b = 0, nBlocks = (nT + T - 1) / T; b < nBlocks; b++) {
            MemorySegment seg = chunks[b / BLOCKS];
            long blk = headBase + (long) (b % BLOCKS) * blockBytes;
            if (!k8) {
                for (int i = 0; i < d; i++) {
                    for (int j = 0; j < T; j++) {
                        kf[i * T + j] = lay.keyCode(seg, blk, i, j);
                    }
                }
            }
            for (int g = 0; g < groups; g++) {
                for (int h = 0; h < T; h += L) {
                    long so = blk + ks + 2L * (g * T + h);
                    IntVector hs = (IntVector) ShortVector.fromMemorySegment(S, seg, so, LE).convertShape(VectorOperators.S2I, I, 0);
                    IntVector ms = hs.and(0x7FFF);
                    FloatVector s = ms.lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f).reinterpretAsInts()
                            .blend(ms.lanewise(VectorOperators.LSHL, 13).or(0x70000000), ms.compare(VectorOperators.GE, 0x7C00))
                            .or(hs.and(0x8000).lanewise(VectorOperators.LSHL, 16)).reinterpretAsFloats();
                    IntVector hz = (IntVector) ShortVector.fromMemorySegment(S, seg, so + (kz - ks), LE).convertShape(VectorOperators.S2I, I, 0);
                    IntVector mz = hz.and(0x7FFF);
                    FloatVector z = mz.lanewise(VectorOperators.LSHL, 13).reinterpretAsFloats().mul(0x1p112f).reinterpretAsInts()
                            .blend(mz.lanewise(VectorOperators.LSHL, 13).or(0x70000000), mz.compare(VectorOperators.GE, 0x7C00))
                            .or(hz.and(0x8000).lanewise(VectorOperators.LSHL, 16)).reinterpretAsFloats();
                    for (int i = g * 32; i < g * 32 + 32; i++) {
                        FloatVector c = k8
                                ? (FloatVector) ByteVector.fromMemorySegment(B, seg, blk + (long) i * T + h, LE)
                                        .convertShape(VectorOperators.B2F, F, 0)
                                : FloatVector.fromArray(F, kf, i * T + h);
                        c.add(z).mul(s).intoArray(kt, i * stride + b * T + h);
                    }
                }
            }
        }
    }

    /**
     * vw[t·headDim …] = value of token t, t < nT: rotated domain when {@code rotated}, else un-rotated per token
     * (original domain, as dequantize-on-fetch does).
     */
    static void decodeValues(TurboKernels kernels, TurboBlockLayout lay, MemorySegment[] chunks, long headBase, int nT,
            float[] vw, boolean rotated) {
        TurboLayout entry = lay.entry();
        int d = lay.headDim();
        int blockBytes = lay.bytes();
        float[] centroids = TurboConstants.centroidsShared(entry.vBits());
        for (int t = 0; t < nT; t++) {
            MemorySegment seg = chunks[t / CHUNK];
            int tc = t % CHUNK;
            // the codec reads V codes at base + valueCodesOffset and V scales right after them, as this layout holds them
            long base = headBase + (long) (tc / T) * blockBytes + lay.valueEntryOffset(tc % T) - entry.valueCodesOffset();
            kernels.decodeValueRotated(entry, centroids, seg, base, vw, t * d);
            if (!rotated) {
                kernels.unrotate(vw, t * d, d);
            }
        }
    }
}
