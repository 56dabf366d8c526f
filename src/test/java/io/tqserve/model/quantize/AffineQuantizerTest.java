package io.tqserve.model.quantize;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.backend.DType;
import io.tqserve.backend.GroupQuant;
import io.tqserve.backend.Layouts;
import io.tqserve.backend.Matrix;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** MLX's affine rounding and LSB-first packing, against hand-computed words. */
class AffineQuantizerTest {
    /**
     * The uint32 words of one 32-column group whose codes are c_k = k mod 2^bits (c_31 = 2^bits - 1), code k at
     * bits [k·bits, (k+1)·bits) of the little-endian stream: e.g. 4 bits, codes 0..7 -> 0x76543210; 2 bits, codes
     * 0,1,2,3 -> 0b11_10_01_00 = 0xE4 per byte; 3 bits, codes 0..7 -> 0xFAC688 in 3 bytes (MLX's byte triples).
     */
    static final Map<Integer, int[]> WORDS = Map.of(
            2, new int[] {0xE4E4E4E4, 0xE4E4E4E4},
            3, new int[] {0x88FAC688, 0xC688FAC6, 0xFAC688FA},
            4, new int[] {0x76543210, 0xFEDCBA98, 0x76543210, 0xFEDCBA98},
            5, new int[] {0x8A418820, 0xC5A92839, 0xCA307B9A, 0x38BDAB49, 0xFFBBCDEB},
            6, new int[] {0x440C2040, 0xA2481C61, 0x3CE34C2C, 0x544D2450, 0xA6585D65, 0xFDE75C6D},
            8, new int[] {0x03020100, 0x07060504, 0x0B0A0908, 0x0F0E0D0C, 0x13121110, 0x17161514, 0x1B1A1918,
                    0xFF1E1D1C});

    static int[] codes(int bits) {
        int[] c = new int[32];
        for (int k = 0; k < 32; k++) {
            c[k] = k % (1 << bits);
        }
        c[31] = (1 << bits) - 1;
        return c;
    }

    @ParameterizedTest
    @ValueSource(ints = {2, 3, 4, 5, 6, 8})
    void packsLsbFirstAsMlx(int bits) {
        int nBins = (1 << bits) - 1;
        int[] c = codes(bits);
        // w = nBins - c: the group spans [0, nBins], |min| <= |max|, so MLX picks scale = -1 and bias = max = nBins,
        // and the code of w is nBins - w = c
        float[] w = new float[32];
        for (int k = 0; k < 32; k++) {
            w[k] = nBins - c[k];
        }
        byte[] packed = new byte[32 * bits / 8];
        float[] scales = new float[1];
        float[] biases = new float[1];
        AffineQuantizer.quantizeRow(w, 0, 32, bits, 32, packed, 0, scales, biases, 0);
        assertThat(scales[0]).isEqualTo(-1f);
        assertThat(biases[0]).isEqualTo(nBins);
        MemorySegment seg = MemorySegment.ofArray(packed);
        int[] words = new int[bits];
        for (int i = 0; i < bits; i++) {
            words[i] = seg.get(Layouts.INT_LE, 4L * i);
        }
        assertThat(words).containsExactly(WORDS.get(bits));
        // and read back: the codes, and the dequantized weights scale·q + bias
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(2);
            MemorySegment b = arena.allocate(2);
            s.set(Layouts.SHORT_LE, 0, AffineQuantizer.toBf16(scales[0]));
            b.set(Layouts.SHORT_LE, 0, AffineQuantizer.toBf16(biases[0]));
            GroupQuant q = new GroupQuant(bits, 32, s, b, DType.BF16);
            Matrix m = new Matrix(arena.allocate(packed.length).copyFrom(seg), DType.U32, 1, 32, q);
            for (int k = 0; k < 32; k++) {
                assertThat(q.code(m.data(), 0, k)).isEqualTo(c[k]);
                assertThat(m.get(0, k)).isEqualTo(w[k]);
            }
        }
    }

    @Test
    void roundsAsMlxAffineQuantize() {
        // group [-1, 0.5, 0.25, 0.3, ...]: |min| > |max|, so the minimum is the exact edge: scale = 1.5/15 = 0.1
        // (then -1 / rint(-1 / 0.1) = -1 / -10 = 0.1), bias = -1; 0.25 -> rint(12.5) = 12 (half to even)
        float[] w = new float[32];
        java.util.Arrays.fill(w, 0.3f);
        w[0] = -1f;
        w[1] = 0.5f;
        w[2] = 0.25f;
        byte[] packed = new byte[16];
        float[] s = new float[1];
        float[] b = new float[1];
        AffineQuantizer.quantizeRow(w, 0, 32, 4, 32, packed, 0, s, b, 0);
        assertThat(s[0]).isEqualTo(0.1f);
        assertThat(b[0]).isEqualTo(-1f);
        assertThat(packed[0] & 0xFF).isEqualTo(0 | 15 << 4); // codes 0 (-1) and 15 (0.5)
        assertThat(packed[1] & 0xFF).isEqualTo(12 | 13 << 4); // 1.25/0.1 = 12.5 -> 12; 0.3 -> 13
        // all-equal group: scale is the 1e-7 floor (negated), q0 = 0 so the bias is 0
        float[] z = new float[32];
        AffineQuantizer.quantizeRow(z, 0, 32, 8, 32, new byte[32], 0, s, b, 0);
        assertThat(s[0]).isEqualTo(-1e-7f);
        assertThat(b[0]).isZero();
    }

    @Test
    void bf16RoundsToNearestEven() {
        assertThat(AffineQuantizer.toBf16(Float.intBitsToFloat(0x3F808000))).isEqualTo((short) 0x3F80); // tie, even
        assertThat(AffineQuantizer.toBf16(Float.intBitsToFloat(0x3F818000))).isEqualTo((short) 0x3F82); // tie, odd up
        assertThat(AffineQuantizer.toBf16(Float.intBitsToFloat(0x3F808001))).isEqualTo((short) 0x3F81);
    }
}
