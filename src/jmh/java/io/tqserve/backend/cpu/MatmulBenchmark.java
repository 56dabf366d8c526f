package io.tqserve.backend.cpu;

import io.tqserve.backend.DType;
import io.tqserve.backend.GroupQuant;
import io.tqserve.backend.Layouts;
import io.tqserve.backend.Matrix;
import io.tqserve.model.quantize.AffineQuantizer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The CPU backend's bf16 matrix-vector and matrix-matrix products on one kernel thread: {@code rows} activation rows
 * against a weight matrix of {@code shape} ("out x in"). 32000x512 is the tiny model's LM head (most of its weight
 * bytes), 5632x2048 a 0.5B model's MLP projection. One op = one matmul; compare ops/s across {@code rows} to see how
 * much a batch of rows costs against one (8 rows at the cost of one = perfect weight reuse). {@code weights} picks
 * the format: bf16, or the same values quantized group-affine (MLX, group 64, bf16 scales) to 8 or 4 bits
 * ({@code q8}, {@code q4}); compare ops/s across formats for what the quantized kernels gain per matrix.
 * {@code layout} runs the kernels on the weights as stored ({@code mapped}) or on the copy the backend repacks at
 * load ({@code repacked}, what a served model's decode reads); {@code activations} what the quantized cases multiply
 * ({@link QuantActivations}: {@code float} the float kernels, {@code auto} the default, integer dot products for
 * 4-bit weights, {@code int8} int8 activations for both widths).
 *
 * <pre>
 * ./mvnw -Pjmh -DskipTests package
 * $JAVA_HOME/bin/java --add-modules jdk.incubator.vector -cp target/benchmarks.jar org.openjdk.jmh.Main \
 *     io.tqserve.backend.cpu.MatmulBenchmark -f 1 -wi 3 -i 5 -w 1s -r 1s
 * </pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
    "-Xmx2g"})
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
public class MatmulBenchmark {
    @Param({"32000x512", "5632x2048"})
    public String shape;

    @Param({"1", "8"})
    public int rows;

    @Param({"bf16", "q8", "q4"})
    public String weights;

    /** {@code mapped}: the kernels on the stored rows; {@code repacked}: on the copy {@link CpuBackend#prepare} keeps. */
    @Param({"mapped", "repacked"})
    public String layout;

    /** What 4- and 8-bit weights multiply ({@link QuantActivations}, lower case; the bf16 case ignores it). */
    @Param({"float", "auto", "int8"})
    public String activations;

    /**
     * The one-row kernel on the repacked layout ({@link MatvecChoice}, {@code -Dtqserve.cpu.matvec-bits}): {@code auto}
     * calibrates during the warm-up; {@code -p matvecBits=512,256} compares the two implementations on a 512-bit
     * machine.
     */
    @Param({"auto"})
    public String matvecBits;

    private Arena arena;
    private CpuBackend backend;
    private Matrix w;
    private float[] x;
    private float[] out;

    @Setup
    public void setup() {
        String[] d = shape.split("x");
        int outDim = Integer.parseInt(d[0]);
        int inDim = Integer.parseInt(d[1]);
        arena = Arena.ofShared();
        Random rnd = new Random(7);
        w = weights.equals("bf16") ? bf16(outDim, inDim, rnd)
                : quantized(outDim, inDim, Integer.parseInt(weights.substring(1)), rnd);
        x = new float[rows * inDim];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) rnd.nextGaussian();
        }
        out = new float[rows * outDim];
        boolean vector = !"false".equalsIgnoreCase(System.getProperty(CpuBackend.VECTOR_PROPERTY, "true"));
        System.setProperty(MatvecChoice.PROPERTY, matvecBits);
        backend = new CpuBackend(vector ? new VectorKernels() : new ScalarKernels(), 1, "bench",
                QuantActivations.valueOf(activations.toUpperCase(java.util.Locale.ROOT)));
        if (layout.equals("repacked")) {
            backend.prepare(java.util.List.of(w));
        }
    }

    private Matrix bf16(int outDim, int inDim, Random rnd) {
        MemorySegment seg = arena.allocate((long) outDim * inDim * 2, 64);
        for (long i = 0; i < (long) outDim * inDim; i++) {
            seg.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i,
                    (short) (Float.floatToRawIntBits((float) rnd.nextGaussian() * 0.02f) >>> 16));
        }
        return new Matrix(seg, DType.BF16, outDim, inDim);
    }

    private Matrix quantized(int outDim, int inDim, int bits, Random rnd) {
        int groupSize = 64;
        int groups = inDim / groupSize;
        long rowBytes = (long) inDim * bits / 8;
        MemorySegment seg = arena.allocate(outDim * rowBytes, 64);
        MemorySegment scales = arena.allocate((long) outDim * groups * 2, 64);
        MemorySegment biases = arena.allocate((long) outDim * groups * 2, 64);
        float[] row = new float[inDim];
        byte[] packed = new byte[(int) rowBytes];
        float[] s = new float[groups];
        float[] b = new float[groups];
        for (int r = 0; r < outDim; r++) {
            for (int c = 0; c < inDim; c++) {
                row[c] = (float) rnd.nextGaussian() * 0.02f;
            }
            AffineQuantizer.quantizeRow(row, 0, inDim, bits, groupSize, packed, 0, s, b, 0);
            MemorySegment.copy(MemorySegment.ofArray(packed), 0, seg, r * rowBytes, rowBytes);
            for (int g = 0; g < groups; g++) {
                scales.setAtIndex(Layouts.SHORT_LE, (long) r * groups + g, AffineQuantizer.toBf16(s[g]));
                biases.setAtIndex(Layouts.SHORT_LE, (long) r * groups + g, AffineQuantizer.toBf16(b[g]));
            }
        }
        return new Matrix(seg, DType.U32, outDim, inDim, new GroupQuant(bits, groupSize, scales, biases, DType.BF16));
    }

    @TearDown
    public void tearDown() {
        backend.close();
        arena.close();
    }

    @Benchmark
    public float[] matmul() {
        backend.matmul(w, x, rows, out);
        return out;
    }
}
