package io.tqserve.config;

import io.tqserve.backend.DType;
import io.tqserve.backend.mlx.MlxBackend;
import io.tqserve.backend.mlx.MlxOptions;
import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.engine.Lane;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.Safetensors;
import io.tqserve.routing.LanePlan;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Whether the model's weights and the KV budgets of the lanes whose caches live on the device fit the MLX device.
 * On MLX the weights, the batched lane's bf16 caches and the turbo lane's bf16 or TurboQuant caches are device
 * arrays (a lane on a uniform int8/int4 scheme keeps Java-memory caches, checked by {@link KvMemoryCheck}); the
 * device should not be asked for more than its recommended working set (Metal) or MLX's memory limit (CPU device),
 * or MLX waits for memory or fails mid-request. Device caches grow by 256 tokens, so each running sequence (up to
 * max-batch on the batched lane, one on the serial turbo lane) may hold up to that much more than it reserved. A
 * configuration that cannot fit fails startup naming the settings to change.
 */
final class MlxMemoryCheck {
    /** Tokens an MLX cache grows by (MlxKvCache.STEP, MlxTurboKvCache.STEP). */
    static final int GROWTH_TOKENS = 256;

    private MlxMemoryCheck() {
    }

    /** The message when weights + device KV do not fit {@code deviceBytes}; empty when they do. */
    static Optional<String> check(long weightBytes, MlxOptions.Dtype dtype, List<LanePlan> plans, int maxBatch,
            long deviceBytes, String deviceSource) {
        long kv = 0;
        long rounding = 0;
        int sequences = 0;
        List<String> budgets = new ArrayList<>();
        List<String> settings = new ArrayList<>();
        for (LanePlan p : plans) {
            if (!onDevice(p.scheme())) {
                continue;
            }
            boolean batched = p.kind() == Lane.Kind.BATCHED;
            int n = batched ? maxBatch : 1;
            kv += p.budgetBytes();
            rounding += (long) n * GROWTH_TOKENS * p.layout().bytesPerToken();
            sequences += n;
            String budget = "tqserve.lanes." + p.kind().wireName() + ".kv-budget";
            budgets.add(String.format("%s (%d MB)", budget, p.budgetBytes() >> 20));
            settings.add(budget);
            if (batched) {
                settings.add("tqserve.lanes.batched.max-batch");
            }
        }
        long need = weightBytes + kv + rounding;
        if (need <= deviceBytes) {
            return Optional.empty();
        }
        String kvText = budgets.isEmpty() ? "" : String.format(" and %s, plus up to %d MB of cache growth for %d "
                + "sequences,", String.join(" and ", budgets), rounding >> 20, sequences);
        List<String> fixes = new ArrayList<>();
        if (!settings.isEmpty()) {
            fixes.add("lower " + or(settings));
        }
        if (dtype == MlxOptions.Dtype.FLOAT32) {
            fixes.add("set tqserve.backend.mlx.dtype=native");
        }
        fixes.add("serve a smaller model");
        return Optional.of(String.format("the model's weights (%d MB as %s)%s need %d MB of MLX device memory, but %s "
                + "is %d MB: %s", weightBytes >> 20, dtype.wireName(), kvText, need >> 20, deviceSource,
                deviceBytes >> 20, String.join(", ", fixes.subList(0, fixes.size() - 1)) + ", or "
                        + fixes.get(fixes.size() - 1)));
    }

    /** Whether MLX keeps a scheme's caches on the device (bf16 and TurboQuant; uniform schemes stay in Java). */
    static boolean onDevice(KvScheme scheme) {
        return scheme instanceof KvScheme.Bf16 || scheme instanceof KvScheme.Turbo;
    }

    /** "a", "a or b", "a, b or c". */
    private static String or(List<String> items) {
        int n = items.size();
        return n == 1 ? items.get(0) : String.join(", ", items.subList(0, n - 1)) + " or " + items.get(n - 1);
    }

    /**
     * Bytes the weights take on the device: every tensor's bytes as stored (the packed codes, scales and biases of
     * quantized modules included, which MLX keeps as they are), with a 16-bit dense tensor counted twice when
     * {@code float32} widens it. Scales and biases of quantized modules stay in the checkpoint's dtype in both modes.
     * A folder whose safetensors cannot be read counts 0 (the load then fails with the reason).
     */
    static long weightBytes(Path modelDir, MlxOptions.Dtype dtype) {
        try (Safetensors st = Safetensors.open(modelDir)) {
            return weightBytes(st.tensors(), dtype);
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    static long weightBytes(Map<String, Safetensors.Tensor> tensors, MlxOptions.Dtype dtype) {
        long total = 0;
        for (Safetensors.Tensor t : tensors.values()) {
            long bytes = t.data().byteSize();
            boolean widened = dtype == MlxOptions.Dtype.FLOAT32 && t.dtype().bytes() == 2
                    && !quantizationParameter(tensors, t.name());
            total += widened ? 2 * bytes : bytes;
        }
        return total;
    }

    /** P.scales or P.biases of a module P whose weight holds packed codes. */
    private static boolean quantizationParameter(Map<String, Safetensors.Tensor> tensors, String name) {
        int dot = name.lastIndexOf('.');
        String suffix = name.substring(dot + 1);
        if (dot < 0 || !(suffix.equals("scales") || suffix.equals("biases"))) {
            return false;
        }
        Safetensors.Tensor w = tensors.get(name.substring(0, dot) + ".weight");
        return w != null && w.dtype() == DType.U32;
    }

    /** {@link #check} against the MLX device, throwing when it does not fit. */
    static void require(Mlx mlx, Path modelDir, TqserveProperties p, List<LanePlan> plans) {
        MlxOptions.Dtype dtype = p.backend().mlx().dtype();
        check(weightBytes(modelDir, dtype), dtype, plans, p.lanes().batched().maxBatch(),
                MlxBackend.deviceMemory(mlx), MlxBackend.deviceMemorySource(mlx)).ifPresent(m -> {
                    throw new StartupValidationException(m);
                });
    }
}
