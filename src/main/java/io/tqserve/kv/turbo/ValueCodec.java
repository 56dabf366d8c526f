package io.tqserve.kv.turbo;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Value half of the codec (spec §6b, vllm-metal {@code tq_encode}): u = v ⊙ σ; y = H·u in float32 ({@link Fwht});
 * y_h = h(y); per 32-group S = Σ fl32(y_h²) accumulated in float32 in element order; scale = h(√fl32(S·(1/32)));
 * n = y_h ÷h scale; code = #{k : n > B_k} (a value equal to a boundary goes to the lower bin, NaN to 0); codes
 * bit-packed, scale stored as fp16.
 *
 * <p>Decode: y_i = fl32(c[code_i]·scale) is the <em>rotated-domain</em> value; the original-domain value is
 * (H·y) ⊙ σ ({@link Fwht#unrotate}). Attention is linear in V, so it can accumulate rotated values and un-rotate
 * the sum once.
 *
 * <p><b>Deviation</b> (only where the reference overflows: a rotated coordinate beyond the fp16 range, which makes
 * its scale ±inf and the group decode to NaN): y_h is rounded with saturation at ±65504 instead of overflowing.
 * Every other group is unchanged because saturating and plain rounding agree on values that do not overflow. The
 * result is finite, but a group whose rotated coordinates exceed 65504 (e.g. a mean input above 65504/√headDim)
 * loses accuracy, as it would in any fp16 cache. Inputs are also clamped to ±2^100 before the rotation, so no
 * finite float32 input can overflow the butterflies (fp16-range inputs are untouched). NaN input stays NaN.
 */
final class ValueCodec {
    private static final int GROUP = TurboLayout.GROUP;
    private static final float INPUT_BOUND = 0x1p100f;

    private ValueCodec() {
    }

    /**
     * Encodes v[vOff, vOff+headDim) into the V codes and V scales of the entry at {@code base}, rotating with the
     * given kernels' FWHT.
     */
    static void encode(TurboKernels kernels, TurboLayout lay, float[] v, int vOff, MemorySegment dst, long base,
            float[] scratch) {
        int d = lay.headDim();
        copyClamped(v, vOff, scratch, d);
        kernels.rotate(scratch, 0, d, TurboConstants.signsShared(d));
        encodeRotated(lay, scratch, dst, base);
    }

    /**
     * Copies v into the scratch row clamped to ±2^100, so that the float32 butterflies (sums of up to 512 inputs)
     * cannot overflow into inf − inf = NaN. Inputs that large saturate y_h anyway; fp16-range inputs are unchanged.
     */
    private static void copyClamped(float[] v, int vOff, float[] scratch, int d) {
        for (int i = 0; i < d; i++) {
            scratch[i] = Math.max(-INPUT_BOUND, Math.min(INPUT_BOUND, v[vOff + i]));
        }
    }

    /** Quantizes the float32 rotated values y[0, headDim) (overwritten with y_h). */
    private static void encodeRotated(TurboLayout lay, float[] y, MemorySegment dst, long base) {
        int bits = lay.vBits();
        float[] bnd = TurboConstants.boundariesShared(bits);
        long codes = base + lay.valueCodesOffset();
        long scales = base + lay.valueScalesOffset();
        long p = codes;
        for (int g = 0, n = lay.groups(); g < n; g++) {
            int o = g * GROUP;
            float sumSq = 0f;
            for (int i = 0; i < GROUP; i++) {
                float yh = Fp16.roundSaturating(y[o + i]);
                y[o + i] = yh;
                sumSq += yh * yh; // lanes 0..31 in order, float32
            }
            float scale = Fp16.round((float) Math.sqrt(sumSq * 0.03125f));
            CodePacking.writeFp16(dst, scales + 2L * g, scale);
            for (int j = 0; j < GROUP; j += 8) {
                long word = 0;
                for (int i = 0; i < 8; i++) {
                    float norm = Fp16.round(y[o + j + i] / scale);
                    word |= (long) bin(bnd, bits, norm) << (i * bits);
                }
                CodePacking.writeEight(dst, p, word, bits);
                p += bits;
            }
        }
    }

    /** #{k : x > bnd[k]} for the 2^bits − 1 ascending boundaries; NaN → 0. Branch-free lower-bound search. */
    static int bin(float[] bnd, int bits, float x) {
        int pos = 0;
        for (int step = 1 << (bits - 1); step > 0; step >>= 1) {
            pos += x > bnd[pos + step - 1] ? step : 0;
        }
        return pos;
    }

    /** Rotated-domain decode: out[outOff+i] = fl32(c[code_i]·scale_g). */
    static void decodeRotatedScalar(TurboLayout lay, MemorySegment src, long base, float[] out, int outOff) {
        int bits = lay.vBits();
        float[] c = TurboConstants.centroidsShared(bits);
        long p = base + lay.valueCodesOffset();
        long scales = base + lay.valueScalesOffset();
        int mask = (1 << bits) - 1;
        long acc = 0;
        int filled = 0;
        for (int g = 0, n = lay.groups(); g < n; g++) {
            float scale = CodePacking.readFp16(src, scales + 2L * g);
            int o = outOff + g * GROUP;
            for (int i = 0; i < GROUP; i++) {
                while (filled < bits) {
                    acc |= (long) (src.get(ValueLayout.JAVA_BYTE, p++) & 0xFF) << filled;
                    filled += 8;
                }
                out[o + i] = c[(int) acc & mask] * scale;
                acc >>>= bits;
                filled -= bits;
            }
        }
    }
}
