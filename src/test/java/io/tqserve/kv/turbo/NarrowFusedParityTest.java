package io.tqserve.kv.turbo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.kv.AttentionShape;
import io.tqserve.kv.KvScheme;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The attention kernels take different paths at 16 and 8 float lanes (AVX-512, AVX2) and fall back to the scalar
 * twins below 8. This machine's preferred species is fixed per JVM, so the narrower widths run in child JVMs
 * capped with -XX:MaxVectorSize, comparing every path's vector kernels with their scalar twins there.
 */
class NarrowFusedParityTest {

    @Test
    void attentionKernelsMatchTheirScalarTwinsAtEightAndFourLanes() throws Exception {
        for (int maxVectorBytes : new int[] {32, 16}) {
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            List<String> cmd = List.of(java, "-XX:MaxVectorSize=" + maxVectorBytes, "--add-modules",
                    "jdk.incubator.vector", "-cp", System.getProperty("java.class.path"), Child.class.getName());
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals(0, p.waitFor(), out);
            assertTrue(out.contains("lanes " + maxVectorBytes / 4 + " ok"), out);
        }
    }

    /** Runs in the child JVM. */
    public static final class Child {
        public static void main(String[] args) {
            Object[][] cases = {
                {"turbo:k8v3", new AttentionShape(1, 4, 2, 128), 37},
                {"turbo:k8v2", new AttentionShape(1, 3, 1, 64), 20},
                {"turbo:k4v4", new AttentionShape(1, 2, 1, 256), 18},
                {"turbo:k8v5", new AttentionShape(1, 2, 2, 128), 9},
                {"turbo:k2v8", new AttentionShape(1, 2, 1, 64), 5},
            };
            try (CpuBackend backend = CpuBackend.create(2)) {
                for (Object[] c : cases) {
                    KvScheme.Turbo t = (KvScheme.Turbo) KvScheme.parse((String) c[0]);
                    AttentionShape shape = (AttentionShape) c[1];
                    int prefill = (Integer) c[2];
                    int total = prefill + 6;
                    TurboAttentionPathsTest.Inputs in = TurboAttentionPathsTest.Inputs.random(shape, total, prefill);
                    for (AttentionPath path : AttentionPath.values()) {
                        float[] vec;
                        float[] sca;
                        try (TurboQuantKvCache v = new TurboQuantKvCache(t, shape, backend, total, 0, path, TurboParity.VEC)) {
                            vec = TurboAttentionPathsTest.run(v, in, prefill, total);
                        }
                        try (TurboQuantKvCache s = new TurboQuantKvCache(t, shape, backend, total, 0, path, TurboParity.SCA)) {
                            sca = TurboAttentionPathsTest.run(s, in, prefill, total);
                        }
                        if (!Arrays.equals(vec, sca)) {
                            throw new AssertionError(c[0] + " " + shape + " " + path + ": vector differs from scalar");
                        }
                    }
                }
            }
            System.out.println("lanes " + FusedScores.L + " ok");
        }
    }
}
