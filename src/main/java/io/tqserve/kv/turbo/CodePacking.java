package io.tqserve.kv.turbo;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Code packing of the TurboQuant entry (spec §7). 8-bit codes are one byte per element (two's complement when
 * signed). 2/3/4/5-bit codes form one flat LSB-first little-endian bitstream: element i occupies bits
 * [i·b, i·b+b), bit 0 being the least significant bit of byte 0, so 3- and 5-bit codes straddle bytes. Also the
 * little-endian fp16 fields.
 */
public final class CodePacking {
    static final ValueLayout.OfShort LE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfInt LE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfLong LE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private CodePacking() {
    }

    /** Writes codes[from, from+n) with {@code bits} bits each at dst[off…]; n·bits must be a multiple of 8. */
    public static void pack(int[] codes, int from, int n, int bits, MemorySegment dst, long off) {
        if (bits == 8) {
            for (int i = 0; i < n; i++) {
                dst.set(ValueLayout.JAVA_BYTE, off + i, (byte) codes[from + i]);
            }
            return;
        }
        int mask = (1 << bits) - 1;
        long acc = 0;
        int filled = 0;
        long p = off;
        for (int i = 0; i < n; i++) {
            acc |= (long) (codes[from + i] & mask) << filled;
            filled += bits;
            while (filled >= 8) {
                dst.set(ValueLayout.JAVA_BYTE, p++, (byte) acc);
                acc >>>= 8;
                filled -= 8;
            }
        }
        if (filled != 0) {
            throw new IllegalArgumentException(n + " codes of " + bits + " bits do not fill whole bytes");
        }
    }

    /**
     * Reads n codes of {@code bits} bits from src[off…] into codes[from…]. 8-bit codes are sign-extended when
     * {@code signed}; all others are unsigned.
     */
    public static void unpack(MemorySegment src, long off, int bits, boolean signed, int[] codes, int from, int n) {
        if (bits == 8) {
            for (int i = 0; i < n; i++) {
                byte b = src.get(ValueLayout.JAVA_BYTE, off + i);
                codes[from + i] = signed ? b : b & 0xFF;
            }
            return;
        }
        int mask = (1 << bits) - 1;
        long acc = 0;
        int filled = 0;
        long p = off;
        for (int i = 0; i < n; i++) {
            while (filled < bits) {
                acc |= (long) (src.get(ValueLayout.JAVA_BYTE, p++) & 0xFF) << filled;
                filled += 8;
            }
            codes[from + i] = (int) acc & mask;
            acc >>>= bits;
            filled -= bits;
        }
    }

    /**
     * Writes the low {@code bits}·8/8 = {@code bits} bytes of {@code word} — eight codes of {@code bits} bits packed
     * LSB-first — at dst[off].
     */
    static void writeEight(MemorySegment dst, long off, long word, int bits) {
        switch (bits) {
            case 8 -> dst.set(LE_LONG, off, word);
            case 5 -> {
                dst.set(LE_INT, off, (int) word);
                dst.set(ValueLayout.JAVA_BYTE, off + 4, (byte) (word >>> 32));
            }
            case 4 -> dst.set(LE_INT, off, (int) word);
            case 3 -> {
                dst.set(LE_SHORT, off, (short) word);
                dst.set(ValueLayout.JAVA_BYTE, off + 2, (byte) (word >>> 16));
            }
            case 2 -> dst.set(LE_SHORT, off, (short) word);
            default -> throw new IllegalArgumentException("bits " + bits);
        }
    }

    /** The fp16 at src[off] (little-endian) as a float. */
    public static float readFp16(MemorySegment src, long off) {
        return Float.float16ToFloat(src.get(LE_SHORT, off));
    }

    /** The raw fp16 bit pattern at src[off] (little-endian). */
    public static short readFp16Bits(MemorySegment src, long off) {
        return src.get(LE_SHORT, off);
    }

    /** Writes h(value) at dst[off], little-endian. */
    public static void writeFp16(MemorySegment dst, long off, float value) {
        dst.set(LE_SHORT, off, Float.floatToFloat16(value));
    }
}
