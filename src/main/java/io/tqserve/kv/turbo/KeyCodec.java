package io.tqserve.kv.turbo;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Key half of the codec: per-32-group affine codes along head_dim, no rotation (spec §5).
 *
 * <p><b>Canonical encode</b> (vllm-metal {@code tq_encode}, float32 with fp16 rounding h(·) at fixed points; mn and
 * mx are the exact float32 minimum and maximum of the group; "÷h" is a float32 quotient rounded to fp16):
 * <ul>
 *   <li>signed 8-bit: scale = h(mx−mn) ÷h 254; z = rint(h(mx+mn) ÷h h(2·scale)); code = rint((h(x) ÷h scale) − z)
 *       clamped to [−127, 127];</li>
 *   <li>unsigned b-bit, M = 2^b−1: scale = h(mx−mn) ÷h M; z = rint(h(mn) ÷h scale); code = rint((h(x) ÷h scale) − z)
 *       clamped to [0, M].</li>
 * </ul>
 * Stored: the codes, fp16 scale and fp16 zero (z is fp16-exact). Decode: fl32(fl32(code + zero)·scale).
 *
 * <p><b>Deviation</b> (only where the reference stores a zero scale, or a non-finite scale or zero — which it then
 * decodes to NaN or ±inf: all-equal groups, and fp16 overflow of mx−mn, mx+mn or the zero point). With
 * hs(·) = fp16 rounding saturated at ±65504, mnh = hs(mn), mxh = hs(mx):
 * <ol type="a">
 *   <li>mnh == mxh (the group is constant at fp16 precision): scale = 1, zero = mnh, all codes 0, so every element
 *       decodes to exactly hs(c);</li>
 *   <li>otherwise: s = smallest fp16 ≥ max((mxh−mnh)/R, max(|mnh|, |mxh|)/1024) with R = 254 (signed) or M;
 *       z = rint((mxh+mnh)/(2s)) (signed) or rint(mnh/s) (unsigned), in float32, so |z| ≤ 1024 and is fp16-exact;
 *       code = rint(hs(x)/s − z) clamped. Every element decodes within s/2 (plus float32 rounding) of hs(x).</li>
 * </ol>
 * The decode formula is unchanged, so a reader (or fused attention) never needs to know which rule wrote a group.
 */
final class KeyCodec {
    private static final int GROUP = TurboLayout.GROUP;
    /** fallback bound on |zero|: keeps it an fp16-exact integer. */
    private static final float ZERO_BOUND = 1024f;

    /** Which rule wrote a group: the reference's, or one of the two deviations. */
    private enum Rule { CANONICAL, CONSTANT, RESCALED }

    private KeyCodec() {
    }

    /**
     * Encodes k[kOff, kOff+headDim) into the layout's K codes, K scales and K zeros of the entry at {@code base};
     * {@code t} is scratch of at least 32 floats.
     */
    static void encode(TurboLayout lay, float[] k, int kOff, MemorySegment dst, long base, float[] t) {
        KeyQuant q = lay.keyQuant();
        int bits = q.bits();
        int lo = q.minCode();
        int hi = q.maxCode();
        boolean signed = q.signed();
        float m = signed ? 254f : hi;
        long codes = base + lay.keyCodesOffset();
        long scales = base + lay.keyScalesOffset();
        long zeros = base + lay.keyZerosOffset();
        int codeMask = (1 << bits) - 1;
        for (int g = 0, n = lay.groups(); g < n; g++) {
            int x0 = kOff + g * GROUP;
            float mn = k[x0];
            float mx = k[x0];
            for (int i = 1; i < GROUP; i++) {
                float v = k[x0 + i];
                mn = Math.min(mn, v);
                mx = Math.max(mx, v);
            }
            float scale = Fp16.round(Fp16.round(mx - mn) / m);
            float zero;
            if (signed) {
                zero = (float) Math.rint(Fp16.round(Fp16.round(mx + mn) / Fp16.round(2f * scale)));
            } else {
                zero = (float) Math.rint(Fp16.round(Fp16.round(mn) / scale));
            }
            Rule rule = Rule.CANONICAL;
            if (scale == 0f || !Float.isFinite(scale) || !Float.isFinite(zero)) {
                float mnh = Fp16.roundSaturating(mn);
                float mxh = Fp16.roundSaturating(mx);
                if (mnh == mxh) {
                    rule = Rule.CONSTANT;
                    scale = 1f;
                    zero = mnh;
                } else {
                    rule = Rule.RESCALED;
                    float bound = Math.max(Math.abs(mnh), Math.abs(mxh)) / ZERO_BOUND;
                    scale = Fp16.roundUp(Math.max((mxh - mnh) / m, bound));
                    zero = (float) Math.rint(signed ? (mxh + mnh) / (2f * scale) : mnh / scale);
                }
            }
            CodePacking.writeFp16(dst, scales + 2L * g, scale);
            CodePacking.writeFp16(dst, zeros + 2L * g, zero);
            // t = q − z per element (float32, before rint), by the group's rule.
            if (rule == Rule.CANONICAL) {
                for (int i = 0; i < GROUP; i++) {
                    t[i] = Fp16.round(Fp16.round(k[x0 + i]) / scale) - zero;
                }
            } else if (rule == Rule.CONSTANT) {
                java.util.Arrays.fill(t, 0, GROUP, 0f);
            } else {
                for (int i = 0; i < GROUP; i++) {
                    t[i] = Fp16.roundSaturating(k[x0 + i]) / scale - zero;
                }
            }
            long p = codes + (long) g * GROUP * bits / 8;
            for (int j = 0; j < GROUP; j += 8) {
                long word = 0;
                for (int i = 0; i < 8; i++) {
                    int r = (int) Math.max(lo, Math.min(hi, (long) Math.rint(t[j + i])));
                    word |= (long) (r & codeMask) << (i * bits);
                }
                CodePacking.writeEight(dst, p, word, bits);
                p += bits;
            }
        }
    }

    /** Decodes the keys of the entry at {@code base} into out[outOff, outOff+headDim). */
    static void decodeScalar(TurboLayout lay, MemorySegment src, long base, float[] out, int outOff) {
        KeyQuant q = lay.keyQuant();
        int bits = q.bits();
        long codes = base + lay.keyCodesOffset();
        long scales = base + lay.keyScalesOffset();
        long zeros = base + lay.keyZerosOffset();
        int mask = (1 << bits) - 1;
        long p = codes;
        long acc = 0;
        int filled = 0;
        for (int g = 0, n = lay.groups(); g < n; g++) {
            float scale = CodePacking.readFp16(src, scales + 2L * g);
            float zero = CodePacking.readFp16(src, zeros + 2L * g);
            int o = outOff + g * GROUP;
            for (int i = 0; i < GROUP; i++) {
                int code;
                if (bits == 8) {
                    byte b = src.get(ValueLayout.JAVA_BYTE, p++);
                    code = q.signed() ? b : b & 0xFF;
                } else {
                    while (filled < bits) {
                        acc |= (long) (src.get(ValueLayout.JAVA_BYTE, p++) & 0xFF) << filled;
                        filled += 8;
                    }
                    code = (int) acc & mask;
                    acc >>>= bits;
                    filled -= bits;
                }
                out[o + i] = ((float) code + zero) * scale;
            }
        }
    }
}
