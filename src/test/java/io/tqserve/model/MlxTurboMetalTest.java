package io.tqserve.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.backend.mlx.MlxBackend;
import io.tqserve.backend.mlx.MlxOptions;
import io.tqserve.backend.mlx.MlxTestLibrary;
import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.backend.mlx.ffm.MlxException;
import io.tqserve.backend.mlx.ffm.MlxCustomKernel;
import io.tqserve.kv.KvCache;
import io.tqserve.kv.KvCacheFactory;
import io.tqserve.kv.KvScheme;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code tqserve.backend.mlx.turbo-kernel=metal}: where MLX has no Metal device the setting is refused when the
 * backend opens, naming the setting, and MLX's own reason reaches the caller through the kernel bindings; where Metal
 * exists, the decode steps through the Metal kernels give the ops path's greedy tokens and logits (float32 mode,
 * tiny-llama-h128, the five reference prompts). The kernels' arithmetic is also checked without Metal by
 * {@code MlxTurboKernelEmulationTest}.
 */
@Tag("mlx")
class MlxTurboMetalTest {
    private static final Path DIR = MlxTurboKvCacheTest.DIR;

    @Test
    void theMetalSettingIsRefusedWithoutMetal() {
        Mlx runtime = MlxTestLibrary.open();
        Assumptions.assumeFalse(MlxCustomKernel.metalAvailable(runtime), "Metal is present: the refusal cannot happen");
        MlxOptions options = MlxOptions.DEFAULTS.withTurboKernel(MlxOptions.TurboKernel.METAL);
        try (CpuBackend cpu = CpuBackend.create(1)) {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> new MlxBackend(runtime, cpu, options));
            assertTrue(e.getMessage().startsWith("tqserve.backend.mlx.turbo-kernel=metal needs MLX on a Metal device"),
                    e.getMessage());
            assertTrue(e.getMessage().endsWith("use tqserve.backend.mlx.turbo-kernel=auto or ops"), e.getMessage());
        }
    }

    @Test
    void mlxsReasonReachesTheCallerWithoutMetal() {
        Mlx runtime = MlxTestLibrary.open();
        Assumptions.assumeFalse(MlxCustomKernel.metalAvailable(runtime), "Metal is present: creation succeeds");
        MlxException e = assertThrows(MlxException.class, () -> MlxCustomKernel.create(runtime, "probe",
                List.of("a"), List.of("b"), "b[thread_position_in_grid.x] = a[thread_position_in_grid.x];"));
        assertTrue(e.getMessage().contains("mlx_fast_metal_kernel_new(probe)"), e.getMessage());
        assertTrue(e.getMessage().contains("No Metal back-end"), e.getMessage());
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"turbo:k8v3", "turbo:k4v2", "turbo:k8v8"})
    void metalKernelsGiveTheOpsPathsTokensAndLogits(String scheme) throws Exception {
        Mlx runtime = MlxTestLibrary.open();
        Assumptions.assumeTrue(MlxCustomKernel.metalAvailable(runtime),
                "no Metal device here: the Metal kernels' parity with the ops path runs on a Mac");
        MlxOptions f32 = MlxOptions.DEFAULTS.withDtype(MlxOptions.Dtype.FLOAT32);
        ModelConfig config = ModelConfig.load(DIR);
        try (Safetensors st = Safetensors.open(DIR);
                MlxBackend ops = new MlxBackend(runtime, CpuBackend.create(1),
                        f32.withTurboKernel(MlxOptions.TurboKernel.OPS));
                MlxBackend metal = new MlxBackend(runtime, CpuBackend.create(1),
                        f32.withTurboKernel(MlxOptions.TurboKernel.METAL));
                Transformer onOps = MlxForwardParityTest.onDevice(DIR, config, st, ops);
                Transformer onMetal = MlxForwardParityTest.onDevice(DIR, config, st, metal)) {
            for (ReferenceOutputs.Prompt p : ReferenceOutputs.load(DIR).prompts()) {
                try (KvCache a = KvCacheFactory.create(KvScheme.parse(scheme), onOps.attentionShape(), ops,
                        config.maxPositions(), 0);
                        KvCache b = KvCacheFactory.create(KvScheme.parse(scheme), onMetal.attentionShape(), metal,
                                config.maxPositions(), 0)) {
                    ForwardState sa = new ForwardState(config);
                    ForwardState sb = new ForwardState(config);
                    float[] la = MlxTurboKvCacheTest.step(onOps, sa, a, p.inputIds());
                    float[] lb = MlxTurboKvCacheTest.step(onMetal, sb, b, p.inputIds());
                    int[] ta = new int[32];
                    int[] tb = new int[32];
                    for (int i = 0; i < 32; i++) {
                        ta[i] = MlxTurboKvCacheTest.argmax(la);
                        tb[i] = MlxTurboKvCacheTest.argmax(lb);
                        float worst = 0;
                        for (int v = 0; v < config.vocabSize(); v++) {
                            worst = Math.max(worst, Math.abs(la[v] - lb[v]));
                        }
                        assertTrue(worst < 1e-3f, scheme + ", '" + p.text() + "', step " + i + ": logits differ by "
                                + worst);
                        // both continue on the ops path's token, so one early flip cannot hide later differences
                        la = MlxTurboKvCacheTest.step(onOps, sa, a, ta[i]);
                        lb = MlxTurboKvCacheTest.step(onMetal, sb, b, ta[i]);
                    }
                    assertArrayEquals(ta, tb, scheme + ", prompt '" + p.text() + "'");
                }
            }
        }
    }
}
