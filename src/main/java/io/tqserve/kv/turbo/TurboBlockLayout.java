package io.tqserve.kv.turbo;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * How {@link TurboQuantKvCache} keeps {@link #TOKENS} consecutive tokens of one (layer, KV head): the same bytes as
 * {@value #TOKENS} canonical entries ({@link TurboLayout}), rearranged so that fused attention reads keys with the
 * tokens along the vector lanes (a score per lane, no horizontal sums) and values one token at a time. Sections, in
 * this order, no padding (G = headDim/32 groups, b = key bits):
 * <pre>
 *   key rows     headDim rows of 2·b bytes: row i holds the 16 codes of element i, token lane j at bits
 *                [j·b, j·b+b) (LSB-first bitstream; 8-bit keys: byte j, two's complement)
 *   key scales   G × 16 fp16: [group][lane]
 *   key zeros    G × 16 fp16: [group][lane]
 *   values       16 × (headDim·vBits/8 + 2G): lane j's canonical V codes then V scales
 * </pre>
 * {@link #bytes()} is exactly 16 × {@link TurboLayout#bytes()}, so the cache holds precisely {@code KvLayout} bytes.
 *
 * @param entry the canonical entry layout
 */
record TurboBlockLayout(TurboLayout entry) {
    /** Tokens per block. */
    static final int TOKENS = 16;

    int headDim() {
        return entry.headDim();
    }

    int groups() {
        return entry.groups();
    }

    /** Bytes of one key row (the 16 codes of one element): 2·kBits. */
    int keyRowBytes() {
        return TOKENS * entry.kBits() / 8;
    }

    int keyScalesOffset() {
        return entry.headDim() * keyRowBytes();
    }

    int keyZerosOffset() {
        return keyScalesOffset() + 2 * TOKENS * groups();
    }

    int valuesOffset() {
        return keyZerosOffset() + 2 * TOKENS * groups();
    }

    /** Bytes of one lane's value section: V codes then V scales, as in the canonical entry. */
    int valueEntryBytes() {
        return entry.valueCodeBytes() + 2 * groups();
    }

    /** Offset of lane j's value section inside the block. */
    long valueEntryOffset(int lane) {
        return valuesOffset() + (long) lane * valueEntryBytes();
    }

    int bytes() {
        return valuesOffset() + TOKENS * valueEntryBytes();
    }

    /**
     * Writes the canonical entry at src[srcOff] into lane {@code lane} of the block at block[blockOff];
     * {@code codes} is scratch of headDim ints. Other lanes are untouched.
     */
    void scatter(MemorySegment src, long srcOff, MemorySegment block, long blockOff, int lane, int[] codes) {
        KeyQuant q = entry.keyQuant();
        int bits = q.bits();
        int d = entry.headDim();
        CodePacking.unpack(src, srcOff + entry.keyCodesOffset(), bits, q.signed(), codes, 0, d);
        int rowBytes = keyRowBytes();
        int mask = (1 << bits) - 1;
        int bit = lane * bits;
        for (int i = 0; i < d; i++) {
            long at = blockOff + (long) i * rowBytes + (bit >>> 3);
            if (bits == 8) {
                block.set(ValueLayout.JAVA_BYTE, at, (byte) codes[i]);
            } else { // at most two bytes: b ≤ 5 and the lane starts at bit (j·b mod 8)
                int shift = bit & 7;
                int span = shift + bits > 8 ? 2 : 1;
                int word = block.get(ValueLayout.JAVA_BYTE, at) & 0xFF;
                if (span == 2) {
                    word |= (block.get(ValueLayout.JAVA_BYTE, at + 1) & 0xFF) << 8;
                }
                word = (word & ~(mask << shift)) | ((codes[i] & mask) << shift);
                block.set(ValueLayout.JAVA_BYTE, at, (byte) word);
                if (span == 2) {
                    block.set(ValueLayout.JAVA_BYTE, at + 1, (byte) (word >>> 8));
                }
            }
        }
        for (int g = 0, n = groups(); g < n; g++) {
            long slot = 2L * (g * TOKENS + lane);
            block.set(CodePacking.LE_SHORT, blockOff + keyScalesOffset() + slot,
                    src.get(CodePacking.LE_SHORT, srcOff + entry.keyScalesOffset() + 2L * g));
            block.set(CodePacking.LE_SHORT, blockOff + keyZerosOffset() + slot,
                    src.get(CodePacking.LE_SHORT, srcOff + entry.keyZerosOffset() + 2L * g));
        }
        MemorySegment.copy(src, srcOff + entry.valueCodesOffset(), block, blockOff + valueEntryOffset(lane),
                valueEntryBytes());
    }

    /** Reads lane {@code lane} of the block back into a canonical entry at dst[dstOff]; the inverse of scatter. */
    void gather(MemorySegment block, long blockOff, int lane, MemorySegment dst, long dstOff, int[] codes) {
        KeyQuant q = entry.keyQuant();
        int bits = q.bits();
        int d = entry.headDim();
        int rowBytes = keyRowBytes();
        int mask = (1 << bits) - 1;
        int bit = lane * bits;
        for (int i = 0; i < d; i++) {
            long at = blockOff + (long) i * rowBytes + (bit >>> 3);
            if (bits == 8) {
                byte b = block.get(ValueLayout.JAVA_BYTE, at);
                codes[i] = q.signed() ? b : b & 0xFF;
            } else {
                int shift = bit & 7;
                int word = block.get(ValueLayout.JAVA_BYTE, at) & 0xFF;
                if (shift + bits > 8) {
                    word |= (block.get(ValueLayout.JAVA_BYTE, at + 1) & 0xFF) << 8;
                }
                codes[i] = (word >>> shift) & mask;
            }
        }
        CodePacking.pack(codes, 0, d, bits, dst, dstOff + entry.keyCodesOffset());
        for (int g = 0, n = groups(); g < n; g++) {
            long slot = 2L * (g * TOKENS + lane);
            dst.set(CodePacking.LE_SHORT, dstOff + entry.keyScalesOffset() + 2L * g,
                    block.get(CodePacking.LE_SHORT, blockOff + keyScalesOffset() + slot));
            dst.set(CodePacking.LE_SHORT, dstOff + entry.keyZerosOffset() + 2L * g,
                    block.get(CodePacking.LE_SHORT, blockOff + keyZerosOffset() + slot));
        }
        MemorySegment.copy(block, blockOff + valueEntryOffset(lane), dst, dstOff + entry.valueCodesOffset(),
                valueEntryBytes());
    }

    /** Key code of element i, lane j (scalar twin's reader; sign-extended for signed 8-bit keys). */
    int keyCode(MemorySegment block, long blockOff, int i, int lane) {
        int bits = entry.kBits();
        int bit = lane * bits;
        long at = blockOff + (long) i * keyRowBytes() + (bit >>> 3);
        if (bits == 8) {
            byte b = block.get(ValueLayout.JAVA_BYTE, at);
            return entry.keyQuant().signed() ? b : b & 0xFF;
        }
        int shift = bit & 7;
        int word = block.get(ValueLayout.JAVA_BYTE, at) & 0xFF;
        if (shift + bits > 8) {
            word |= (block.get(ValueLayout.JAVA_BYTE, at + 1) & 0xFF) << 8;
        }
        return (word >>> shift) & ((1 << bits) - 1);
    }

    /** Key scale of group g, lane j. */
    float keyScale(MemorySegment block, long blockOff, int g, int lane) {
        return Float.float16ToFloat(block.get(CodePacking.LE_SHORT, blockOff + keyScalesOffset() + 2L * (g * TOKENS + lane)));
    }

    /** Key zero of group g, lane j. */
    float keyZero(MemorySegment block, long blockOff, int g, int lane) {
        return Float.float16ToFloat(block.get(CodePacking.LE_SHORT, blockOff + keyZerosOffset() + 2L * (g * TOKENS + lane)));
    }

    /** Value scale of group g of the value section at {@code valueOff} (absolute). */
    float valueScale(MemorySegment block, long valueOff, int g) {
        return Float.float16ToFloat(block.get(CodePacking.LE_SHORT, valueOff + entry.valueCodeBytes() + 2L * g));
    }
}
