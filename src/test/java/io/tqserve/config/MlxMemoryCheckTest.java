package io.tqserve.config;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.backend.mlx.MlxOptions;
import io.tqserve.engine.Lane;
import io.tqserve.kv.KvLayout;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.ModelConfig;
import io.tqserve.routing.LanePlan;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

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
    void float32DoublesA16BitCheckpoint() throws Exception {
        Path dir = Path.of("models/tiny-llama-h128");
        ModelConfig c = ModelConfig.load(dir);
        long nativeBytes = MlxMemoryCheck.weightBytes(dir, c, MlxOptions.Dtype.NATIVE);
        assertThat(nativeBytes).isEqualTo(14814416L + 14293368L + 14689736L);
        assertThat(MlxMemoryCheck.weightBytes(dir, c, MlxOptions.Dtype.FLOAT32)).isEqualTo(2 * nativeBytes);
    }
}
