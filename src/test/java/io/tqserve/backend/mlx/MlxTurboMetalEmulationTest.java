package io.tqserve.backend.mlx;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.tqserve.kv.turbo.KeyQuant;
import io.tqserve.kv.turbo.TurboCodec;
import io.tqserve.kv.turbo.TurboLayout;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link MlxTurboMetal}'s two Metal kernels, run on the CPU by {@link MetalEmulator}, against the Java codec: over a
 * cache section laid out as {@link MlxTurboKvCache} holds it (KV heads × capacity × section width, the first n
 * tokens written, the rest of the capacity filled with other codes the kernels must not read), the scores equal
 * Σ q·k̂ of the Java-decoded keys and the rotated sums equal Σ w·v̂ of the Java-decoded rotated values, for every key
 * quantizer (signed and unsigned 8-bit, 5, 4, 2 bits), every value width, head_dim 64 and 128, and the values
 * kernel's token chunks from 8 tokens (five chunks, the last one short) to a single chunk. The sums are
 * compared in double with a tolerance of 1e-5 of the sum of the terms' magnitudes (float32 rounding of a few hundred
 * terms). Skipped, saying so, where no g++ exists.
 */
class MlxTurboMetalEmulationTest {
    private static final int HEADS = 2;  // KV heads
    private static final int ROWS = 3;   // query rows per KV head (GQA)
    private static final int TOKENS = 37;
    private static final int CAPACITY = 41;

    @TempDir
    Path work;

    @BeforeAll
    static void compiler() {
        Assumptions.assumeTrue(MetalEmulator.available(), "no g++ on this machine: the Metal kernels' emulation needs it");
    }

    @ParameterizedTest(name = "{0} keys, {1}-bit values, head_dim {2}, chunks of {3} tokens")
    @CsvSource({"Q8_0, 3, 128, 16", "UINT8, 8, 128, 256", "Q5_0, 5, 128, 16", "Q4_0, 2, 128, 37", "INT2, 4, 128, 8",
        "Q8_0, 8, 64, 16", "Q4_0, 3, 64, 256"})
    void kernelsMatchTheJavaCodec(KeyQuant keys, int vBits, int d, int chunk) throws Exception {
        TurboCodec codec = new TurboCodec(new TurboLayout(keys, vBits, d));
        TurboLayout lay = codec.layout();
        int groups = d / 32;
        Random rnd = new Random(keys.ordinal() * 31L + vBits * 7L + d);
        // entries of every (head, slot), slots beyond TOKENS included: the kernels must stop at TOKENS
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
        byte[] kc = section(entries, lay, lay.keyCodesOffset(), lay.keyCodeBytes());
        byte[] ks = section(entries, lay, lay.keyScalesOffset(), 2 * groups);
        byte[] kz = section(entries, lay, lay.keyZerosOffset(), 2 * groups);
        byte[] vc = section(entries, lay, lay.valueCodesOffset(), lay.valueCodeBytes());
        byte[] vs = section(entries, lay, lay.valueScalesOffset(), 2 * groups);

        float[] q = new float[HEADS * ROWS * d];
        for (int i = 0; i < q.length; i++) {
            q[i] = (float) rnd.nextGaussian();
        }
        float[] w = new float[HEADS * ROWS * TOKENS];
        for (int i = 0; i < w.length; i++) {
            w[i] = rnd.nextFloat() / TOKENS;
        }

        List<String[]> scoreArgs = List.of(new String[] {"int D", "" + d}, new String[] {"int KB", "" + keys.bits()},
                new String[] {"bool KSIGNED", keys.signed() ? "1" : "0"});
        byte[] scoresOut = MetalEmulator.run(dir("scores"), "tq_scores", MlxTurboMetal.SCORES_SOURCE, scoreArgs,
                List.of(new MetalEmulator.Input("q", "float", new int[] {HEADS, ROWS, d}, floats(q)),
                        new MetalEmulator.Input("kc", "uint8_t", new int[] {1, HEADS, CAPACITY, lay.keyCodeBytes()}, kc),
                        new MetalEmulator.Input("ks", "float16_t", new int[] {1, HEADS, CAPACITY, groups}, ks),
                        new MetalEmulator.Input("kz", "float16_t", new int[] {1, HEADS, CAPACITY, groups}, kz)),
                List.of(new MetalEmulator.Output("scores", "float", 4, HEADS * ROWS * TOKENS)),
                new int[] {TOKENS, ROWS, HEADS}).get(0);
        float[] scores = toFloats(scoresOut);
        float[] kHat = new float[d];
        for (int h = 0; h < HEADS; h++) {
            for (int t = 0; t < TOKENS; t++) {
                codec.decodeKey(entries, (long) (h * CAPACITY + t) * lay.bytes(), kHat, 0);
                for (int r = 0; r < ROWS; r++) {
                    double sum = 0;
                    double mag = 0;
                    for (int i = 0; i < d; i++) {
                        double term = (double) q[(h * ROWS + r) * d + i] * kHat[i];
                        sum += term;
                        mag += Math.abs(term);
                    }
                    assertEquals(sum, scores[(h * ROWS + r) * TOKENS + t], 1e-5 * mag + 1e-6,
                            "score of head " + h + ", row " + r + ", token " + t);
                }
            }
        }

        List<String[]> valueArgs = List.of(new String[] {"int D", "" + d}, new String[] {"int VB", "" + vBits},
                new String[] {"int CHUNK", "" + chunk});
        int chunks = (TOKENS + chunk - 1) / chunk;
        float[] cent = codec.centroids();
        byte[] valuesOut = MetalEmulator.run(dir("values"), "tq_values", MlxTurboMetal.VALUES_SOURCE, valueArgs,
                List.of(new MetalEmulator.Input("w", "float", new int[] {HEADS, ROWS, TOKENS}, floats(w)),
                        new MetalEmulator.Input("vc", "uint8_t", new int[] {1, HEADS, CAPACITY, lay.valueCodeBytes()}, vc),
                        new MetalEmulator.Input("vs", "float16_t", new int[] {1, HEADS, CAPACITY, groups}, vs),
                        new MetalEmulator.Input("cent", "float", new int[] {cent.length}, floats(cent))),
                List.of(new MetalEmulator.Output("out", "float", 4, chunks * HEADS * ROWS * d)),
                new int[] {d, ROWS, HEADS * chunks}).get(0);
        float[] partial = toFloats(valuesOut); // (chunks, H, m, D): the op after the kernel adds the chunks
        float[] values = new float[HEADS * ROWS * d];
        for (int c = 0; c < chunks; c++) {
            for (int i = 0; i < values.length; i++) {
                values[i] += partial[c * values.length + i];
            }
        }
        float[][] vHat = new float[TOKENS][d];
        for (int h = 0; h < HEADS; h++) {
            for (int t = 0; t < TOKENS; t++) {
                codec.decodeValueRotated(entries, (long) (h * CAPACITY + t) * lay.bytes(), vHat[t], 0);
            }
            for (int r = 0; r < ROWS; r++) {
                for (int j = 0; j < d; j++) {
                    double sum = 0;
                    double mag = 0;
                    for (int t = 0; t < TOKENS; t++) {
                        double term = (double) w[(h * ROWS + r) * TOKENS + t] * vHat[t][j];
                        sum += term;
                        mag += Math.abs(term);
                    }
                    assertEquals(sum, values[(h * ROWS + r) * d + j], 1e-5 * mag + 1e-7,
                            "rotated value of head " + h + ", row " + r + ", dim " + j);
                }
            }
        }
    }

    private Path dir(String name) throws java.io.IOException {
        return java.nio.file.Files.createDirectories(work.resolve(name));
    }

    /** One section (offset, width bytes) of every entry, entry-major: the device array (1, heads, capacity, w). */
    private static byte[] section(MemorySegment entries, TurboLayout lay, int offset, int width) {
        int n = (int) (entries.byteSize() / lay.bytes());
        byte[] out = new byte[n * width];
        for (int e = 0; e < n; e++) {
            MemorySegment.copy(entries, (long) e * lay.bytes() + offset, MemorySegment.ofArray(out), (long) e * width,
                    width);
        }
        return out;
    }

    private static byte[] floats(float[] f) {
        ByteBuffer b = ByteBuffer.allocate(4 * f.length).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(f);
        return b.array();
    }

    private static float[] toFloats(byte[] bytes) {
        float[] f = new float[bytes.length / 4];
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(f);
        return f;
    }
}
