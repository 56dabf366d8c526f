package io.tqserve.backend.mlx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.GroupQuant;
import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.backend.mlx.ffm.MlxArray;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.backend.mlx.ffm.MlxScope;
import io.tqserve.model.quantize.AffineQuantizer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The bindings of MLX's {@code quantize}, {@code dequantize} and {@code quantized_matmul} against the repo's own
 * affine quantizer and dequantization: the same words, scales and biases to the bit for every supported width, and
 * the same dequantized values and products.
 */
@Tag("mlx")
class MlxQuantizedOpsTest {
    static final int ROWS = 8;
    static final int COLS = 384;
    static Mlx mlx;

    @BeforeEach
    void requireMlx() {
        mlx = MlxTestLibrary.open();
    }

    static float[] weights(long seed) {
        Random r = new Random(seed);
        float[] w = new float[ROWS * COLS];
        for (int i = 0; i < w.length; i++) {
            w[i] = (float) (r.nextGaussian() * 0.05 + (i % 7 == 0 ? 0.02 : 0));
        }
        return w;
    }

    @ParameterizedTest
    @CsvSource({"2,32", "3,64", "4,64", "5,128", "6,32", "8,128", "4,32", "8,64"})
    void mlxQuantizeEqualsTheAffineQuantizerAndDequantizeEqualsGroupQuant(int bits, int groupSize) {
        float[] w = weights(bits * 1000L + groupSize);
        int rowBytes = COLS * bits / 8;
        int groups = COLS / groupSize;
        byte[] packed = new byte[ROWS * rowBytes];
        float[] scales = new float[ROWS * groups];
        float[] biases = new float[ROWS * groups];
        for (int r = 0; r < ROWS; r++) {
            AffineQuantizer.quantizeRow(w, r * COLS, COLS, bits, groupSize, packed, r * rowBytes, scales, biases,
                    r * groups);
        }
        int[] words = new int[packed.length / 4];
        ByteBuffer.wrap(packed).order(ByteOrder.LITTLE_ENDIAN).asIntBuffer().get(words);
        try (MlxScope s = mlx.newScope()) {
            MlxArray[] q = s.quantize(s.fromFloats(w, ROWS, COLS), groupSize, bits);
            assertEquals(3, q.length);
            assertEquals(MlxDtype.UINT32, q[0].dtype());
            assertArrayEquals(new int[] {ROWS, COLS * bits / 32}, q[0].shape());
            assertArrayEquals(words, s.toInts(s.view(q[0], MlxDtype.INT32)), "packed words");
            assertArrayEquals(scales, s.toFloats(q[1]), 0f, "scales");
            assertArrayEquals(biases, s.toFloats(q[2]), 0f, "biases");

            // dequantize: scale·q + bias, as GroupQuant.dequant (one fused rounding); MLX rounds the product first,
            // which may move the sum by an ulp of the larger addend
            float[] deq = s.toFloats(s.dequantize(q[0], q[1], q[2], groupSize, bits, MlxDtype.FLOAT32));
            for (int r = 0; r < ROWS; r++) {
                for (int c = 0; c < COLS; c++) {
                    int code = 0;
                    long bit = (long) c * bits;
                    for (int b = 0; b < bits; b++, bit++) {
                        code |= ((packed[r * rowBytes + (int) (bit >>> 3)] >>> (bit & 7)) & 1) << b;
                    }
                    int g = r * groups + c / groupSize;
                    float expected = GroupQuant.dequant(code, scales[g], biases[g]);
                    float tol = Math.ulp(Math.max(Math.abs(scales[g] * code), Math.abs(biases[g])));
                    assertEquals(expected, deq[r * COLS + c], tol, "(" + r + "," + c + ")");
                }
            }

            // x · dequantize(w)ᵀ: quantized_matmul against the float32 dot products of the dequantized rows
            float[] x = weights(7);
            float[] y = s.toFloats(s.quantizedMatmul(s.fromFloatsAt(x, 0, 2 * COLS, 2, COLS), q[0], q[1], q[2],
                    groupSize, bits));
            for (int i = 0; i < 2; i++) {
                for (int r = 0; r < ROWS; r++) {
                    double dot = 0;
                    double mag = 0;
                    for (int c = 0; c < COLS; c++) {
                        dot += (double) x[i * COLS + c] * deq[r * COLS + c];
                        mag += Math.abs((double) x[i * COLS + c] * deq[r * COLS + c]);
                    }
                    float got = y[i * ROWS + r];
                    assertTrue(Math.abs(got - dot) <= 1e-6 * mag + 1e-9, "y[" + i + "," + r + "] = " + got
                            + ", expected " + dot);
                }
            }
        }
    }
}
