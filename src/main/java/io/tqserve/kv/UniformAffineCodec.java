package io.tqserve.kv;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The uniform affine KV baselines {@code int8} / {@code int4}: keys and values quantized alike, groups of 64 along
 * head_dim, an fp16 scale and fp16 bias per group, as mlx-lm's quantized KV cache ({@code mx.quantize}, affine mode).
 *
 * <p>Per group (float32, following MLX's CPU {@code quantize}): N = 2^bits − 1; if |min| > |max| the edge is min and
 * s = max((max−min)/N, 1e-7), else the edge is max and s = −max((max−min)/N, 1e-7); q0 = rint(edge/s); if q0 ≠ 0 then
 * s = edge/q0 and bias = edge, else bias = 0; code = clamp(rint((x − bias)/s), 0, N). The edge of larger magnitude
 * is represented exactly (before the fp16 rounding of scale and bias); the far extreme can then land up to one step
 * past the last code and is clamped, so the error bound is one step rather than half. Decode: fl32(scale·code) + bias with the
 * stored fp16 scale and bias. Inputs are clamped to ±65504 first so scale and bias never overflow fp16 (a deviation
 * only for inputs an fp16/bf16 model cannot produce in fp16).
 *
 * <p>Entry layout (per token per KV head; G = headDim/64; fp16 little-endian; codes LSB-first, 4-bit: low nibble is
 * the even element — the byte order of MLX's little-endian uint32 packing):
 * <pre>
 *   K codes headDim·bits/8 | K scales 2G | K biases 2G | V codes headDim·bits/8 | V scales 2G | V biases 2G
 * </pre>
 */
public final class UniformAffineCodec implements KvCodec {
    /** Elements per group. */
    public static final int GROUP = KvScheme.Uniform.GROUP;
    private static final ValueLayout.OfShort LE_SHORT =
            ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final float EPS = 1e-7f;
    private static final float FP16_MAX = 65504f;

    private final int bits;
    private final int headDim;
    private final int codeBytes;
    private final int groups;

    public UniformAffineCodec(KvScheme.Uniform scheme, int headDim) {
        KvLayout.checkServable(scheme, headDim);
        this.bits = scheme.bits();
        this.headDim = headDim;
        this.codeBytes = headDim * bits / 8;
        this.groups = headDim / GROUP;
    }

    public int bits() {
        return bits;
    }

    @Override
    public int headDim() {
        return headDim;
    }

    @Override
    public int entryBytes() {
        return 2 * halfBytes();
    }

    /** Bytes of the K half (codes, scales, biases); the V half starts here. */
    public int halfBytes() {
        return codeBytes + 4 * groups;
    }

    public int keyCodesOffset() {
        return 0;
    }

    public int keyScalesOffset() {
        return codeBytes;
    }

    public int valueCodesOffset() {
        return halfBytes();
    }

    public int valueScalesOffset() {
        return halfBytes() + codeBytes;
    }

    public int valueBiasesOffset() {
        return halfBytes() + codeBytes + 2 * groups;
    }

    @Override
    public void encode(float[] k, int kOff, float[] v, int vOff, MemorySegment dst, long off) {
        KvCodec.checkEntry(dst, off, entryBytes());
        encodeHalf(k, kOff, dst, off);
        encodeHalf(v, vOff, dst, off + halfBytes());
    }

    @Override
    public void decodeKey(MemorySegment src, long off, float[] out, int outOff) {
        KvCodec.checkEntry(src, off, entryBytes());
        decodeHalf(src, off, out, outOff);
    }

    @Override
    public void decodeValue(MemorySegment src, long off, float[] out, int outOff) {
        KvCodec.checkEntry(src, off, entryBytes());
        decodeHalf(src, off + halfBytes(), out, outOff);
    }

    /** Scale of group g of the K half (value half: add {@link #halfBytes()} to off). */
    public float scale(MemorySegment src, long off, int g) {
        return Float.float16ToFloat(src.get(LE_SHORT, off + codeBytes + 2L * g));
    }

    /** Bias of group g of the K half (value half: add {@link #halfBytes()} to off). */
    public float bias(MemorySegment src, long off, int g) {
        return Float.float16ToFloat(src.get(LE_SHORT, off + codeBytes + 2L * groups + 2L * g));
    }

    private void encodeHalf(float[] x, int xOff, MemorySegment dst, long base) {
        float n = (1 << bits) - 1;
        int mask = (1 << bits) - 1;
        long p = base;
        long acc = 0;
        int filled = 0;
        for (int g = 0; g < groups; g++) {
            int x0 = xOff + g * GROUP;
            float mn = clamp(x[x0]);
            float mx = mn;
            for (int i = 1; i < GROUP; i++) {
                float v = clamp(x[x0 + i]);
                mn = Math.min(mn, v);
                mx = Math.max(mx, v);
            }
            boolean minEdge = Math.abs(mn) > Math.abs(mx);
            float scale = Math.max((mx - mn) / n, EPS);
            scale = minEdge ? scale : -scale;
            float edge = minEdge ? mn : mx;
            float q0 = (float) Math.rint(edge / scale);
            float bias = 0f;
            if (q0 != 0f) {
                scale = edge / q0;
                bias = edge;
            }
            dst.set(LE_SHORT, base + codeBytes + 2L * g, Float.floatToFloat16(scale));
            dst.set(LE_SHORT, base + codeBytes + 2L * groups + 2L * g, Float.floatToFloat16(bias));
            for (int i = 0; i < GROUP; i++) {
                float q = (float) Math.rint((clamp(x[x0 + i]) - bias) / scale);
                int code = (int) Math.max(0f, Math.min(q, n));
                acc |= (long) (code & mask) << filled;
                filled += bits;
                while (filled >= 8) {
                    dst.set(ValueLayout.JAVA_BYTE, p++, (byte) acc);
                    acc >>>= 8;
                    filled -= 8;
                }
            }
        }
    }

    private void decodeHalf(MemorySegment src, long base, float[] out, int outOff) {
        int mask = (1 << bits) - 1;
        long p = base;
        for (int g = 0; g < groups; g++) {
            float scale = scale(src, base, g);
            float bias = bias(src, base, g);
            int o = outOff + g * GROUP;
            if (bits == 8) {
                for (int i = 0; i < GROUP; i++) {
                    out[o + i] = scale * (src.get(ValueLayout.JAVA_BYTE, p + i) & 0xFF) + bias;
                }
                p += GROUP;
            } else {
                for (int i = 0; i < GROUP; i += 2) {
                    int b = src.get(ValueLayout.JAVA_BYTE, p++) & 0xFF;
                    out[o + i] = scale * (b & mask) + bias;
                    out[o + i + 1] = scale * (b >>> 4) + bias;
                }
            }
        }
    }

    private static float clamp(float x) {
        return Math.max(-FP16_MAX, Math.min(FP16_MAX, x));
    }
}
