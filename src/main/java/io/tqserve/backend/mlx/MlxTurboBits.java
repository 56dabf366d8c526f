package io.tqserve.backend.mlx;

import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxScope;

/**
 * Unpacking of TurboQuant codes from the LSB-first bitstream of {@code docs/kv-format.md} (the inverse of
 * {@link MlxTurboCodec#pack}) in MLX ops: element i of a row is bits [i·b, i·b+b) of its bytes, bit 0 the least
 * significant bit of byte 0; signed 8-bit codes are two's complement.
 */
final class MlxTurboBits {
    private MlxTurboBits() {
    }

    /** (n, headDim·bits/8) uint8 → (n, headDim) int32 codes. */
    static MlxArray unpack(MlxScope s, MlxArray packed, int bits, boolean signed) {
        int[] shape = packed.shape();
        int n = shape[0];
        int d = shape[1] * 8 / bits;
        if (bits == 8) {
            MlxArray x = s.astype(packed, MlxDtype.INT32);
            if (!signed) {
                return x;
            }
            MlxArray wrap = s.multiply(s.astype(s.greater(x, s.scalar(127)), MlxDtype.INT32), s.scalar(256));
            return s.subtract(x, wrap);
        }
        MlxArray u = s.expandDims(s.astype(packed, MlxDtype.UINT32), 2); // (n, bytes, 1)
        if (8 % bits == 0) { // 2, 4: whole codes per byte, element j of a byte at bits j·b
            int per = 8 / bits;
            int[] shifts = new int[per];
            for (int j = 0; j < per; j++) {
                shifts[j] = j * bits;
            }
            MlxArray sh = s.astype(s.fromInts(shifts, 0, per, per), MlxDtype.UINT32);
            MlxArray codes = s.bitwiseAnd(s.rightShift(u, sh), s.astype(s.scalar((1 << bits) - 1), MlxDtype.UINT32));
            return s.astype(s.reshape(codes, n, d), MlxDtype.INT32);
        }
        // 3, 5: codes straddle bytes; every b bytes hold 8 codes, so read them as one little-endian word
        // (b·8 ≤ 40 bits: uint64) and shift each code out of it
        int words = shape[1] / bits;
        MlxArray bytes = s.reshape(s.astype(packed, MlxDtype.UINT64), n, words, bits);
        MlxArray byteShift = s.multiply(s.arange(0, bits, MlxDtype.UINT64), s.astype(s.scalar(8), MlxDtype.UINT64));
        MlxArray word = s.sum(s.leftShift(bytes, byteShift), 2, true); // (n, words, 1); disjoint bits: sum = or
        MlxArray codeShift = s.multiply(s.arange(0, 8, MlxDtype.UINT64), s.astype(s.scalar(bits), MlxDtype.UINT64));
        MlxArray codes = s.bitwiseAnd(s.rightShift(word, codeShift), s.astype(s.scalar((1 << bits) - 1),
                MlxDtype.UINT64));
        return s.astype(s.reshape(codes, n, d), MlxDtype.INT32);
    }
}
