package io.tqserve.config;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.backend.mlx.MlxOptions;
import io.tqserve.engine.Lane;
import io.tqserve.kv.KvLayout;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.quantize.WeightQuantizer;
import io.tqserve.routing.LanePlan;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The startup check of weights + the device-resident lanes' KV budgets against MLX device memory (plain arithmetic). */
class MlxMemoryCheckTest {
    static final KvLayout BF16 = KvLayout.of(KvScheme.BF16, 6, 2, 128); // 6,144 B per token
    static final KvScheme K8V3 = KvScheme.parse("turbo:k8v3");
    static final KvLayout TURBO = KvLayout.of(K8V3, 6, 2, 128); // 2,400 B per token
    static final KvScheme INT8 = KvScheme.parse("int8");

    /** The batched lane, and a turbo lane on int8, whose caches stay in Java memory on MLX (not counted here). */
    static List<LanePlan> batched(long budget) {
        return List.of(new LanePlan(Lane.Kind.TURBO, INT8, KvLayout.of(INT8, 6, 2, 128), 1L << 40),
                new LanePlan(Lane.Kind.BATCHED, KvScheme.BF16, BF16, budget));
    }

    @Test
    void fitsWhenWeightsBudgetAndGrowthFit() {
        long growth = 8L * 256 * 6144;
        assertThat(MlxMemoryCheck.check(100 << 20, MlxOptions.Dtype.NATIVE, batched(512 << 20), 8,
                (100 << 20) + (512 << 20) + growth, "x")).isEmpty();
    }

    @Test
    void aBudgetThatDoesNotFitNamesTheSettings() {
        assertThat(MlxMemoryCheck.check(1L << 30, MlxOptions.Dtype.FLOAT32, batched(8L << 30), 8, 4L << 30,
                "the device's recommended working set")).hasValue("the model's weights (1024 MB as float32) and "
                + "tqserve.lanes.batched.kv-budget (8192 MB), plus up to 12 MB of cache growth for 8 sequences, need "
                + "9228 MB of MLX device memory, but the device's recommended working set is 4096 MB: lower "
                + "tqserve.lanes.batched.kv-budget or tqserve.lanes.batched.max-batch, set "
                + "tqserve.backend.mlx.dtype=native, or serve a smaller model");
    }

    /**
     * The turbo lane's TurboQuant caches are device arrays on MLX: its budget and one sequence's growth (256 tokens
     * at 2,400 B) count beside the batched lane's, to the byte.
     */
    @Test
    void theTurboLanesDeviceBudgetCountsBesideTheBatchedLanes() {
        List<LanePlan> plans = List.of(new LanePlan(Lane.Kind.TURBO, K8V3, TURBO, 1L << 30),
                new LanePlan(Lane.Kind.BATCHED, KvScheme.BF16, BF16, 512L << 20));
        long need = (100L << 20) + (1L << 30) + (512L << 20) + 256L * 2400 + 8L * 256 * 6144;
        assertThat(MlxMemoryCheck.check(100 << 20, MlxOptions.Dtype.NATIVE, plans, 8, need, "x")).isEmpty();
        assertThat(MlxMemoryCheck.check(100 << 20, MlxOptions.Dtype.NATIVE, plans, 8, need - 1,
                "MLX's memory limit on Device(cpu, 0)")).hasValue("the model's weights (100 MB as native) and "
                + "tqserve.lanes.turbo.kv-budget (1024 MB) and tqserve.lanes.batched.kv-budget (512 MB), plus up to "
                + "12 MB of cache growth for 9 sequences, need 1648 MB of MLX device memory, but MLX's memory limit on "
                + "Device(cpu, 0) is 1648 MB: lower tqserve.lanes.turbo.kv-budget, tqserve.lanes.batched.kv-budget or "
                + "tqserve.lanes.batched.max-batch, or serve a smaller model");
    }

    @Test
    void float32DoublesA16BitCheckpoint() {
        Path dir = Path.of("models/tiny-llama-h128");
        long nativeBytes = MlxMemoryCheck.weightBytes(dir, MlxOptions.Dtype.NATIVE);
        // 8192x512 embedding, 6 layers of q/k/v/o (512x512, 256x512 twice, 512x512) and MLP (3 x 1408x512), 13 norms
        long params = 8192L * 512 + 6L * (2 * 512 * 512 + 2 * 256 * 512 + 3 * 1408 * 512) + 13 * 512;
        assertThat(nativeBytes).isEqualTo(2 * params);
        assertThat(MlxMemoryCheck.weightBytes(dir, MlxOptions.Dtype.FLOAT32)).isEqualTo(2 * nativeBytes);
    }

    @Test
    void quantizedWeightsCountTheirPackedBytesAndFloat32WidensOnlyTheDenseTensors(@TempDir Path tmp) throws Exception {
        Path q = tmp.resolve("q4");
        WeightQuantizer.run(Path.of("models/tiny-llama-h128"), q,
                new WeightQuantizer.Options(4, 64, null, false, 1, null), null);
        // per weight: 4 bits of code + a bf16 scale and bias per 64 weights = 0.5625 bytes; the norms stay bf16
        long quantized = 8192L * 512 + 6L * (2 * 512 * 512 + 2 * 256 * 512 + 3 * 1408 * 512);
        long norms = 13 * 512 * 2;
        assertThat(MlxMemoryCheck.weightBytes(q, MlxOptions.Dtype.NATIVE)).isEqualTo(quantized * 9 / 16 + norms);
        assertThat(MlxMemoryCheck.weightBytes(q, MlxOptions.Dtype.FLOAT32)).isEqualTo(quantized * 9 / 16 + 2 * norms);
    }
}
