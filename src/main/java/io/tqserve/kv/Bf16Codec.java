package io.tqserve.kv;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The {@code bf16} KV scheme as a codec: K then V, headDim bfloat16 each, little-endian (4·headDim bytes). Rounding is
 * to nearest even; NaN becomes the quiet NaN 0x7FC0.
 */
public final class Bf16Codec implements KvCodec {
    private static final ValueLayout.OfShort LE_SHORT =
            ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final int headDim;

    public Bf16Codec(int headDim) {
        KvLayout.checkServable(KvScheme.BF16, headDim);
        this.headDim = headDim;
    }

    /** float32 → bfloat16 bits, round to nearest even. */
    public static short toBf16(float x) {
        int b = Float.floatToRawIntBits(x);
        if ((b & 0x7FFFFFFF) > 0x7F800000) {
            return (short) 0x7FC0;
        }
        return (short) ((b + 0x7FFF + ((b >>> 16) & 1)) >>> 16);
    }

    /** bfloat16 bits → float32 (exact). */
    public static float fromBf16(short h) {
        return Float.intBitsToFloat((h & 0xFFFF) << 16);
    }

    @Override
    public int headDim() {
        return headDim;
    }

    @Override
    public int entryBytes() {
        return 4 * headDim;
    }

    @Override
    public void encode(float[] k, int kOff, float[] v, int vOff, MemorySegment dst, long off) {
        KvCodec.checkEntry(dst, off, entryBytes());
        for (int i = 0; i < headDim; i++) {
            dst.set(LE_SHORT, off + 2L * i, toBf16(k[kOff + i]));
            dst.set(LE_SHORT, off + 2L * (headDim + i), toBf16(v[vOff + i]));
        }
    }

    @Override
    public void decodeKey(MemorySegment src, long off, float[] out, int outOff) {
        KvCodec.checkEntry(src, off, entryBytes());
        for (int i = 0; i < headDim; i++) {
            out[outOff + i] = fromBf16(src.get(LE_SHORT, off + 2L * i));
        }
    }

    @Override
    public void decodeValue(MemorySegment src, long off, float[] out, int outOff) {
        KvCodec.checkEntry(src, off, entryBytes());
        for (int i = 0; i < headDim; i++) {
            out[outOff + i] = fromBf16(src.get(LE_SHORT, off + 2L * (headDim + i)));
        }
    }
}
