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

/** The startup check of weights + the batched lane's KV budget against MLX device memory (plain arithmetic). */
class MlxMemoryCheckTest {
    static final KvLayout BF16 = KvLayout.of(KvScheme.BF16, 6, 2, 128); // 6,144 B per token

    static List<LanePlan> batched(long budget) {
        return List.of(new LanePlan(Lane.Kind.BATCHED, KvScheme.BF16, BF16, budget),
                new LanePlan(Lane.Kind.TURBO, KvScheme.BF16, BF16, 1L << 40)); // the turbo lane's caches stay in Java
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
                + "tqserve.lanes.batched.kv-budget (8192 MB, plus up to 12 MB of cache growth for 8 sequences) need "
                + "9228 MB of MLX device memory, but the device's recommended working set is 4096 MB: lower "
                + "tqserve.lanes.batched.kv-budget or tqserve.lanes.batched.max-batch, set "
                + "tqserve.backend.mlx.dtype=native, or serve a smaller model");
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
