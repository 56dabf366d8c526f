package io.tqserve.backend.mlx;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.tqserve.backend.mlx.ffm.MlxCustomKernel.Gpu;
import io.tqserve.backend.mlx.ffm.MlxDtype;
import io.tqserve.kv.turbo.KeyQuant;
import io.tqserve.kv.turbo.TurboCodec;
import io.tqserve.kv.turbo.TurboLayout;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link MlxTurboKernels}' fused decode kernel and its reduction, generated for Metal and for CUDA from the one body
 * ({@link MlxTurboKernelSource}) and run on the CPU by {@link KernelEmulator}, against the Java codec: over a cache
 * section laid out as {@link MlxTurboKvCache} holds it (KV heads × capacity × section width, the first n tokens
 * written, the rest of the capacity filled with other codes the kernel must not read), the normalised rotated sums
 * equal Σ softmax(q·k̂/√D)·v̂ of the Java-decoded keys and rotated values, and the log-mass equals log Σ e^(q·k̂/√D),
 * for every key quantizer (signed and unsigned 8-bit, 5, 4, 2 bits), every value width, head_dim 64 and 128, and
 * blocks of 8 tokens (five blocks, the last one short) to a single block. Compared in double with a tolerance of
 * 1e-5 of the sum of the terms' magnitudes (float32 rounding, exp, a different summation order). Skipped, saying so,
 * where no g++ exists.
 */
class MlxTurboKernelEmulationTest {
    private static final int HEADS = 2;  // KV heads
    private static final int ROWS = 3;   // query rows per KV head (GQA)
    private static final int TOKENS = 37;
    private static final int CAPACITY = 41;

    @TempDir
    static Path work;

    /** Emulators by kernel and language, shared by the cases: an instantiation is compiled once. */
    private static final Map<String, KernelEmulator> EMULATORS = new HashMap<>();

    static KernelEmulator emulator(Path work, Gpu gpu, String name) {
        return EMULATORS.computeIfAbsent(name + "-" + gpu, key -> name.equals("tq_decode")
                ? new KernelEmulator(work, gpu, name, MlxTurboKernelSource.DECODE_INPUTS,
                        MlxTurboKernelSource.DECODE_OUTPUTS,
                        MlxTurboKernelSource.source(gpu, MlxTurboKernelSource.DECODE_BODY),
                        MlxTurboKernelSource.header(gpu))
                : new KernelEmulator(work, gpu, name, MlxTurboKernelSource.REDUCE_INPUTS,
                        MlxTurboKernelSource.REDUCE_OUTPUTS,
                        MlxTurboKernelSource.source(gpu, MlxTurboKernelSource.REDUCE_BODY),
                        MlxTurboKernelSource.header(gpu)));
    }

    @BeforeAll
    static void compiler() {
        Assumptions.assumeTrue(KernelEmulator.available(), "no g++ on this machine: the kernels' emulation needs it");
    }

    @ParameterizedTest(name = "{0} keys, {1}-bit values, head_dim {2}, blocks of {3} tokens, {4}")
    @CsvSource({"Q8_0, 3, 128, 16, METAL", "UINT8, 8, 128, 64, METAL", "Q5_0, 5, 128, 8, METAL",
        "Q4_0, 2, 128, 37, METAL", "INT2, 4, 128, 8, METAL", "Q8_0, 8, 64, 16, METAL", "Q4_0, 3, 64, 64, METAL",
        "Q8_0, 3, 128, 16, CUDA", "UINT8, 8, 128, 64, CUDA", "Q5_0, 5, 128, 8, CUDA", "Q4_0, 2, 128, 37, CUDA",
        "INT2, 4, 128, 8, CUDA", "Q8_0, 8, 64, 16, CUDA", "Q4_0, 3, 64, 64, CUDA"})
    void fusedKernelMatchesTheJavaCodec(KeyQuant keys, int vBits, int d, int block, Gpu gpu) throws Exception {
        TurboCodec codec = new TurboCodec(new TurboLayout(keys, vBits, d));
        TurboLayout lay = codec.layout();
        int groups = d / 32;
        Random rnd = new Random(keys.ordinal() * 31L + vBits * 7L + d);
        // entries of every (head, slot), slots beyond TOKENS included: the kernel must stop at TOKENS
        MemorySegment entries = MemorySegment.ofArray(new byte[HEADS * CAPACITY * lay.bytes()]);
        float[] k = new float[d];
        float[] v = new float[d];
        for (int e = 0; e < HEADS * CAPACITY; e++) {
            for (int i = 0; i < d; i++) {
                k[i] = (float) rnd.nextGaussian() * 2f + (i % 7 == 0 ? 3f : 0f);
                v[i] = (float) rnd.nextGaussian();
            }
            codec.encode(k, 0, v, 0, entries, (long) e * lay.bytes());
        }
        float[] q = new float[HEADS * ROWS * d];
        for (int i = 0; i < q.length; i++) {
            q[i] = (float) rnd.nextGaussian() * 1.5f;
        }
        int[] sec = {1, HEADS, CAPACITY};
        float[] cent = codec.centroids();
        List<KernelEmulator.Input> inputs = List.of(
                new KernelEmulator.Input(MlxDtype.FLOAT32, new int[] {HEADS, ROWS, d}, floats(q)),
                new KernelEmulator.Input(MlxDtype.INT32, new int[] {1}, ints(TOKENS)),
                section(entries, lay, lay.keyCodesOffset(), lay.keyCodeBytes(), MlxDtype.UINT8, sec),
                section(entries, lay, lay.keyScalesOffset(), groups, MlxDtype.FLOAT16, sec),
                section(entries, lay, lay.keyZerosOffset(), groups, MlxDtype.FLOAT16, sec),
                section(entries, lay, lay.valueCodesOffset(), lay.valueCodeBytes(), MlxDtype.UINT8, sec),
                section(entries, lay, lay.valueScalesOffset(), groups, MlxDtype.FLOAT16, sec),
                new KernelEmulator.Input(MlxDtype.FLOAT32, new int[] {cent.length}, floats(cent)));
        int blocks = (TOKENS + block - 1) / block;
        KernelEmulator decode = emulator(work, gpu, "tq_decode");
        byte[] part = decode.run(inputs, List.of(new KernelEmulator.Output(MlxDtype.FLOAT32,
                        (long) HEADS * ROWS * blocks * (d + 2))), new int[] {32 * blocks, ROWS, HEADS},
                new int[] {32, 1, 1}, MlxTurboKernels.decodeArgs(d, keys.bits(), keys.signed(), vBits, block)).get(0);
        KernelEmulator reduce = emulator(work, gpu, "tq_reduce");
        List<byte[]> reduced = reduce.run(
                List.of(new KernelEmulator.Input(MlxDtype.FLOAT32, new int[] {HEADS, ROWS, blocks, d + 2}, part)),
                List.of(new KernelEmulator.Output(MlxDtype.FLOAT32, (long) HEADS * ROWS * d),
                        new KernelEmulator.Output(MlxDtype.FLOAT32, (long) HEADS * ROWS)),
                new int[] {d, ROWS, HEADS}, new int[] {d, 1, 1},
                List.of(io.tqserve.backend.mlx.ffm.MlxCustomKernel.TemplateArg.of("D", d)));
        float[] out = toFloats(reduced.get(0));
        float[] lse = toFloats(reduced.get(1));

        double scale = (float) (1.0 / Math.sqrt(d));
        float[] kHat = new float[d];
        float[][] vHat = new float[TOKENS][d];
        for (int h = 0; h < HEADS; h++) {
            float[][] kh = new float[TOKENS][];
            for (int t = 0; t < TOKENS; t++) {
                long at = (long) (h * CAPACITY + t) * lay.bytes();
                codec.decodeKey(entries, at, kHat, 0);
                kh[t] = kHat.clone();
                codec.decodeValueRotated(entries, at, vHat[t], 0);
            }
            for (int r = 0; r < ROWS; r++) {
                double[] s = new double[TOKENS];
                double[] sMag = new double[TOKENS];
                double max = Double.NEGATIVE_INFINITY;
                for (int t = 0; t < TOKENS; t++) {
                    for (int i = 0; i < d; i++) {
                        double term = (double) q[(h * ROWS + r) * d + i] * kh[t][i];
                        s[t] += term;
                        sMag[t] += Math.abs(term);
                    }
                    s[t] *= scale;
                    sMag[t] *= scale;
                    max = Math.max(max, s[t]);
                }
                double sum = 0;
                double worstScoreError = 0; // a score off by e moves every weight by a factor up to e^e
                for (int t = 0; t < TOKENS; t++) {
                    sum += Math.exp(s[t] - max);
                    worstScoreError = Math.max(worstScoreError, 1e-5 * sMag[t] + 1e-6);
                }
                String at = gpu + ", head " + h + ", row " + r;
                assertEquals(max + Math.log(sum), lse[h * ROWS + r], 2 * worstScoreError + 1e-5,
                        "log-mass of " + at);
                for (int j = 0; j < d; j++) {
                    double val = 0;
                    double mag = 0;
                    for (int t = 0; t < TOKENS; t++) {
                        double term = Math.exp(s[t] - max) / sum * vHat[t][j];
                        val += term;
                        mag += Math.abs(term);
                    }
                    assertEquals(val, out[(h * ROWS + r) * d + j], (1e-5 + 2 * worstScoreError) * mag + 1e-7,
                            "rotated value of " + at + ", dim " + j);
                }
            }
        }
    }

    /** One section (offset, width elements) of every entry, entry-major: the device array (1, heads, capacity, w). */
    private static KernelEmulator.Input section(MemorySegment entries, TurboLayout lay, int offset, int width,
            MlxDtype dtype, int[] lead) {
        int n = (int) (entries.byteSize() / lay.bytes());
        int bytes = width * dtype.bytes();
        byte[] out = new byte[n * bytes];
        for (int e = 0; e < n; e++) {
            MemorySegment.copy(entries, (long) e * lay.bytes() + offset, MemorySegment.ofArray(out), (long) e * bytes,
                    bytes);
        }
        return new KernelEmulator.Input(dtype, new int[] {lead[0], lead[1], lead[2], width}, out);
    }

    static byte[] floats(float[] f) {
        ByteBuffer b = ByteBuffer.allocate(4 * f.length).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(f);
        return b.array();
    }

    private static byte[] ints(int... v) {
        ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        b.asIntBuffer().put(v);
        return b.array();
    }

    static float[] toFloats(byte[] bytes) {
        float[] f = new float[bytes.length / 4];
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(f);
        return f;
    }
}
