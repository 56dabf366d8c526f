package io.tqserve.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.tqserve.backend.DType;
import io.tqserve.backend.GroupQuant;
import io.tqserve.backend.Layouts;
import io.tqserve.backend.Matrix;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@link QuantizedInt8}'s kernels (int8 activations, and the wide 4-bit range of {@link QuantizedWide4}) and their
 * scalar twin against NumPy on the same stored values
 * ({@code int8-dot-reference.json}, made by {@code tools/gen_int8_dot_reference.py}): the quantized activations exactly,
 * the outputs within float32 rounding of the kernels' formula (1e-5 of the sum of the terms' magnitudes), and their
 * distance to the plain dequantized product within the bound activation rounding allows.
 */
class QuantizedInt8Test {
    static CpuBackend vector;
    static CpuBackend packed;
    static CpuBackend wide;
    static CpuBackend widePacked;
    static Arena arena;

    record Case(int bits, int range, int groupSize, int rows, int cols, Matrix w, float[] x, int[] xq, float[] d, double[] out,
            double[] dense, double[] bound) {
    }

    @BeforeAll
    static void start() {
        vector = new CpuBackend(new VectorKernels(), 2, "test", QuantActivations.INT8);
        packed = new CpuBackend(new VectorKernels(), 2, "test", QuantActivations.INT8);
        wide = new CpuBackend(new VectorKernels(), 2, "test", QuantActivations.AUTO);
        widePacked = new CpuBackend(new VectorKernels(), 2, "test", QuantActivations.AUTO);
        arena = Arena.ofShared();
    }

    @AfterAll
    static void stop() {
        vector.close();
        packed.close();
        wide.close();
        widePacked.close();
        arena.close();
    }

    static List<Case> cases() throws Exception {
        JsonNode root;
        try (InputStream in = QuantizedInt8Test.class.getResourceAsStream("int8-dot-reference.json")) {
            root = JsonMapper.shared().readTree(in);
        }
        List<Case> cases = new ArrayList<>();
        for (JsonNode c : root.path("cases")) {
            int bits = c.get("bits").asInt();
            int gs = c.get("group_size").asInt();
            int rows = c.get("rows").asInt();
            int cols = c.get("cols").asInt();
            MemorySegment data = arena.allocate((long) rows * cols * bits / 8, 64);
            JsonNode words = c.get("words");
            for (int i = 0; i < words.size(); i++) {
                data.setAtIndex(Layouts.INT_LE, i, (int) words.get(i).asLong());
            }
            int n = rows * (cols / gs);
            MemorySegment scales = arena.allocate(2L * n);
            MemorySegment biases = arena.allocate(2L * n);
            for (int i = 0; i < n; i++) {
                scales.setAtIndex(Layouts.SHORT_LE, i, (short) c.get("scales_bf16").get(i).asInt());
                biases.setAtIndex(Layouts.SHORT_LE, i, (short) c.get("biases_bf16").get(i).asInt());
            }
            Matrix w = new Matrix(data, DType.U32, rows, cols, new GroupQuant(bits, gs, scales, biases, DType.BF16));
            float[] x = new float[cols];
            int[] xq = new int[cols];
            for (int i = 0; i < cols; i++) {
                x[i] = (float) c.get("x").get(i).asDouble();
                xq[i] = c.get("xq").get(i).asInt();
            }
            float[] d = new float[c.get("d").size()];
            for (int i = 0; i < d.length; i++) {
                d[i] = (float) c.get("d").get(i).asDouble();
            }
            cases.add(new Case(bits, c.get("range").asInt(), gs, rows, cols, w, x, xq, d, doubles(c.get("out")), doubles(c.get("dense")),
                    doubles(c.get("bound"))));
        }
        return cases;
    }

    private static double[] doubles(JsonNode a) {
        double[] out = new double[a.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = a.get(i).asDouble();
        }
        return out;
    }

    /** The kernels' activations in column order (undoing {@link QuantizedInt8#quantize}'s permutation). */
    static int[] columnOrder(int bits, short[] xq) {
        int per = 16 / bits;
        int blk = QuantizedInt8.block(bits);
        int[] out = new int[xq.length];
        for (int t = 0; t < xq.length; t += blk) {
            for (int c = 0; c < per; c++) {
                for (int j = 0; j < 16; j++) {
                    out[t + per * j + c] = xq[t + c * 16 + j];
                }
            }
        }
        return out;
    }

    /** The magnitude the float32 rounding of a row's result is measured against: the sum of its terms' moduli. */
    static double scale(Case c, int r, float[] xsum) {
        GroupQuant q = c.w().quant();
        int groups = c.cols() / c.groupSize();
        int per = 32 / c.bits();
        int z = (int) QuantizedInt8.zero(c.bits());
        double m = 0;
        for (int col = 0; col < c.cols(); col++) {
            int word = c.w().data().getAtIndex(Layouts.INT_LE, ((long) r * c.cols() + col) / per);
            int code = (word >>> (col % per * c.bits())) & ((1 << c.bits()) - 1);
            m += Math.abs(q.scale(r, col / c.groupSize(), groups) * (double) c.d()[col / QuantizedInt8.block(c.bits())]
                    * (code - z) * c.xq()[col]);
        }
        for (int g = 0; g < groups; g++) {
            m += Math.abs((q.bias(r, g, groups) + z * (double) q.scale(r, g, groups)) * xsum[g]);
        }
        return m;
    }

    @Test
    void kernelsAndTwinMatchNumPyOnTheStoredValues() throws Exception {
        assumeTrue(QuantizedVector.L == 8, "int8 kernels need 256-bit vectors");
        for (Case c : cases()) {
            String what = c.bits() + "-bit, groups of " + c.groupSize() + ", |xq| <= " + c.range();
            assertTrue(QuantizedInt8.supported(c.bits(), c.groupSize()), what);
            short[] xq = new short[c.cols()];
            float[] d = new float[c.cols() / QuantizedInt8.block(c.bits())];
            QuantizedInt8.quantize(c.bits(), c.range(), c.x(), 0, c.cols(), xq, 0, d, 0);
            assertArrayEquals(c.xq(), columnOrder(c.bits(), xq), what + ": quantized activations");
            assertArrayEquals(c.d(), d, what + ": block scales");
            float[] xsum = new float[c.cols() / c.groupSize()];
            QuantizedVector.groupSums(c.x(), 0, c.cols(), c.groupSize(), xsum, 0);

            CpuBackend onMapped = c.range() == 127 ? vector : wide;
            CpuBackend onPack = c.range() == 127 ? packed : widePacked;
            float[] mapped = new float[c.rows()];
            onMapped.matmul(c.w(), c.x(), 1, mapped);
            onPack.prepare(List.of(c.w()));
            assertTrue(onPack.repacked(c.w()), what);
            float[] pack = new float[c.rows()];
            onPack.matmul(c.w(), c.x(), 1, pack);
            for (int r = 0; r < c.rows(); r++) {
                double tol = 1e-5 * scale(c, r, xsum);
                float twin = QuantizedInt8.dot(c.w(), r, xq, 0, d, 0, xsum, 0);
                assertEquals(c.out()[r], twin, tol, what + ": scalar twin, row " + r);
                assertEquals(c.out()[r], mapped[r], tol, what + ": vector kernel, row " + r);
                assertEquals(Float.floatToIntBits(mapped[r]), Float.floatToIntBits(pack[r]),
                        what + ": the repacked rows give the mapped rows' bits, row " + r);
                assertTrue(Math.abs(mapped[r] - c.dense()[r]) <= c.bound()[r] + tol,
                        what + ": row " + r + " moved " + Math.abs(mapped[r] - c.dense()[r])
                                + " from the dense product, more than activation rounding allows (" + c.bound()[r]
                                + ")");
            }
        }
    }
}
