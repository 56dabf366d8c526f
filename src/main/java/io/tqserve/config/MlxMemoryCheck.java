package io.tqserve.config;

import io.tqserve.backend.mlx.MlxBackend;
import io.tqserve.backend.mlx.MlxOptions;
import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.engine.Lane;
import io.tqserve.model.ModelConfig;
import io.tqserve.routing.LanePlan;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Whether the model's weights and the batched lane's KV budget fit the MLX device. On MLX the weights and the
 * batched lane's bf16 caches are device arrays (the turbo lane's caches stay in Java memory, checked by
 * {@link KvMemoryCheck}); the device should not be asked for more than its recommended working set (Metal) or
 * MLX's memory limit (CPU device), or MLX waits for memory or fails mid-request. Caches grow by 256 tokens, so each
 * running sequence may hold up to that much more than it reserved. A configuration that cannot fit fails startup
 * naming the settings to change.
 */
final class MlxMemoryCheck {
    /** Tokens an MLX cache grows by (MlxKvCache.STEP). */
    static final int GROWTH_TOKENS = 256;

    private MlxMemoryCheck() {
    }

    /** The message when weights + KV do not fit {@code deviceBytes}; empty when they do. */
    static Optional<String> check(long weightBytes, MlxOptions.Dtype dtype, List<LanePlan> plans, int maxBatch,
            long deviceBytes, String deviceSource) {
        long kv = 0;
        long rounding = 0;
        for (LanePlan p : plans) {
            if (p.kind() == Lane.Kind.BATCHED) {
                kv = p.budgetBytes();
                rounding = (long) maxBatch * GROWTH_TOKENS * p.layout().bytesPerToken();
            }
        }
        long need = weightBytes + kv + rounding;
        if (need <= deviceBytes) {
            return Optional.empty();
        }
        return Optional.of(String.format("the model's weights (%d MB as %s) and tqserve.lanes.batched.kv-budget "
                + "(%d MB, plus up to %d MB of cache growth for %d sequences) need %d MB of MLX device memory, but %s is "
                + "%d MB: lower tqserve.lanes.batched.kv-budget or tqserve.lanes.batched.max-batch%s, or serve a "
                + "smaller model", weightBytes >> 20, dtype.wireName(), kv >> 20, rounding >> 20, maxBatch, need >> 20,
                deviceSource, deviceBytes >> 20, dtype == MlxOptions.Dtype.FLOAT32
                        ? ", set tqserve.backend.mlx.dtype=native" : ""));
    }

    /**
     * Bytes the weights take on the device: the safetensors files' sizes (headers are a few KB), doubled when
     * {@code float32} widens a 16-bit checkpoint.
     */
    static long weightBytes(Path modelDir, ModelConfig config, MlxOptions.Dtype dtype) {
        long files;
        try (Stream<Path> s = Files.list(modelDir)) {
            files = s.filter(f -> f.getFileName().toString().endsWith(".safetensors")).mapToLong(f -> {
                try {
                    return Files.size(f);
                } catch (IOException e) {
                    return 0;
                }
            }).sum();
        } catch (IOException e) {
            return 0;
        }
        boolean sixteenBit = !config.dtype().equalsIgnoreCase("float32");
        return dtype == MlxOptions.Dtype.FLOAT32 && sixteenBit ? 2 * files : files;
    }

    /** {@link #check} against the MLX device, throwing when it does not fit. */
    static void require(Mlx mlx, Path modelDir, ModelConfig config, TqserveProperties p, List<LanePlan> plans) {
        MlxOptions.Dtype dtype = p.backend().mlx().dtype();
        check(weightBytes(modelDir, config, dtype), dtype, plans, p.lanes().batched().maxBatch(),
                MlxBackend.deviceMemory(mlx), MlxBackend.deviceMemorySource(mlx)).ifPresent(m -> {
                    throw new StartupValidationException(m);
                });
    }
}
