package io.tqserve.kv.turbo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The vector kernels take different paths at 16, 8 and 4 float lanes (AVX-512, AVX2, SSE/NEON). This machine's
 * preferred species is fixed per JVM, so the narrower widths run in child JVMs capped with -XX:MaxVectorSize and
 * compare every layout's vector codec against the scalar twin there.
 */
class NarrowVectorParityTest {

    @Test
    void vectorCodecMatchesScalarTwinAtEightAndFourLanes() throws Exception {
        for (int maxVectorBytes : new int[] {32, 16}) {
            String out = runChild(maxVectorBytes);
            int lanes = maxVectorBytes / 4;
            assertTrue(out.contains("lanes " + lanes + " ok"), "child JVM at " + lanes + " lanes: " + out);
        }
    }

    private static String runChild(int maxVectorBytes) throws IOException, InterruptedException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = List.of(java, "-XX:MaxVectorSize=" + maxVectorBytes, "--add-modules", "jdk.incubator.vector",
                "-cp", System.getProperty("java.class.path"), Child.class.getName());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), out);
        return out;
    }

    /** Runs in the child JVM: encodes and decodes random and garbage entries with both codecs. */
    public static final class Child {
        public static void main(String[] args) {
            Random rnd = new Random(1);
            for (int d : TurboConstants.HEAD_DIMS) {
                for (KeyQuant kq : KeyQuant.values()) {
                    for (int vBits : TurboConstants.V_BITS) {
                        check(new TurboLayout(kq, vBits, d), rnd);
                    }
                }
            }
            System.out.println("lanes " + VectorFwht.F.length() + " ok");
        }

        private static void check(TurboLayout lay, Random rnd) {
            int d = lay.headDim();
            TurboCodec vec = new TurboCodec(lay, TurboParity.VEC);
            TurboCodec sca = new TurboCodec(lay, TurboParity.SCA);
            byte[] a = new byte[lay.bytes() + 7];
            byte[] b = new byte[lay.bytes() + 7];
            for (int trial = 0; trial < 6; trial++) {
                float[] x = new float[d + 3];
                for (int i = 0; i < x.length; i++) {
                    x[i] = (float) (rnd.nextGaussian() * Math.pow(10, rnd.nextInt(8) - 4));
                }
                vec.encode(x, 3, x, 1, a, 7);
                sca.encode(x, 3, x, 1, b, 7);
                if (!Arrays.equals(a, 7, a.length, b, 7, b.length)) {
                    throw new AssertionError("encode differs: " + lay);
                }
                if (trial % 2 == 1) {
                    rnd.nextBytes(a);
                }
                float[] k1 = new float[d];
                float[] k2 = new float[d];
                float[] v1 = new float[d];
                float[] v2 = new float[d];
                vec.decode(MemorySegment.ofArray(a), 7, k1, 0, v1, 0);
                sca.decode(MemorySegment.ofArray(a), 7, k2, 0, v2, 0);
                if (!Arrays.equals(TurboGoldenTest.floatBits(k1), TurboGoldenTest.floatBits(k2))
                        || !Arrays.equals(TurboGoldenTest.floatBits(v1), TurboGoldenTest.floatBits(v2))) {
                    throw new AssertionError("decode differs: " + lay);
                }
            }
        }
    }
}
