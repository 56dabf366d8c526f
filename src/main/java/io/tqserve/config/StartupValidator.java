package io.tqserve.config;

import io.tqserve.backend.BackendSelector;
import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.backend.mlx.MlxBackend;
import io.tqserve.backend.mlx.MlxOptions;
import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.engine.Lane;
import io.tqserve.kv.KvLayout;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.ModelConfig;
import io.tqserve.routing.LanePlan;
import io.tqserve.routing.RoutingPolicy;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Checks, before any weight is loaded, that the configuration can be served: the model folder and its
 * config.json, the turbo lane's KV scheme against the model's head dim (and its bit widths), the lanes and the
 * routing policy, the backend, and the Vector API module. Every failure names the setting to change.
 */
public final class StartupValidator {

    /**
     * What the checks established.
     *
     * @param modelDir    the model folder
     * @param modelId     the served model id
     * @param modelConfig the model's config.json
     * @param backend     the backend that will run it ("cpu" or "mlx")
     * @param plans       the enabled lanes with their exact KV layouts
     */
    public record Plan(Path modelDir, String modelId, ModelConfig modelConfig, String backend, List<LanePlan> plans) {
    }

    private StartupValidator() {
    }

    public static Plan validate(TqserveProperties p) {
        p.backend().mlx().options(); // the MLX limits parse, or startup fails naming the key
        String backend = checkBackend(p.backend());
        checkTurboKernel(p.backend(), backend);
        Path dir = Path.of(p.model().path());
        if (!Files.isDirectory(dir)) {
            throw new StartupValidationException("model folder " + dir.toAbsolutePath()
                    + " does not exist; set tqserve.model.path to a Hugging Face model folder");
        }
        ModelConfig config;
        try {
            config = ModelConfig.load(dir);
        } catch (IOException | RuntimeException e) {
            throw new StartupValidationException("cannot read the model's config.json in " + dir.toAbsolutePath()
                    + ": " + e.getMessage() + "; set tqserve.model.path to a supported model folder", e);
        }
        TqserveProperties.Lanes lanes = p.lanes();
        if (!lanes.turbo().enabled() && !lanes.batched().enabled()) {
            throw new StartupValidationException(
                    "both lanes are disabled; set tqserve.lanes.turbo.enabled=true or tqserve.lanes.batched.enabled=true");
        }
        TqserveProperties.Speculative spec = lanes.speculative();
        if (spec.maxNgram() < spec.minNgram()) {
            throw new StartupValidationException("tqserve.lanes.speculative.max-ngram (" + spec.maxNgram()
                    + ") is below tqserve.lanes.speculative.min-ngram (" + spec.minNgram() + "); raise max-ngram");
        }
        RoutingPolicy policy = p.routing().policy();
        if (policy == RoutingPolicy.TURBO && !lanes.turbo().enabled()) {
            throw new StartupValidationException("tqserve.routing.policy=turbo needs the turbo lane; set "
                    + "tqserve.lanes.turbo.enabled=true or tqserve.routing.policy=auto");
        }
        if (policy == RoutingPolicy.BATCHED && !lanes.batched().enabled()) {
            throw new StartupValidationException("tqserve.routing.policy=batched needs the batched lane; set "
                    + "tqserve.lanes.batched.enabled=true or tqserve.routing.policy=auto");
        }
        List<LanePlan> plans = new ArrayList<>(2);
        if (lanes.turbo().enabled()) {
            KvScheme scheme = p.kv().scheme();
            checkTurboScheme(scheme, config.headDim());
            long budget = budget(lanes.turbo().kvBudget().toBytes(), "tqserve.lanes.turbo.kv-budget");
            plans.add(new LanePlan(Lane.Kind.TURBO, scheme, layout(scheme, config), budget));
        }
        if (lanes.batched().enabled()) {
            long budget = budget(lanes.batched().kvBudget().toBytes(), "tqserve.lanes.batched.kv-budget");
            plans.add(new LanePlan(Lane.Kind.BATCHED, KvScheme.BF16, layout(KvScheme.BF16, config), budget));
        }
        for (LanePlan plan : plans) {
            long oneToken = plan.layout().bytesPerToken();
            if (plan.budgetBytes() < oneToken * 2) {
                throw new StartupValidationException("tqserve.lanes." + plan.kind().wireName() + ".kv-budget ("
                        + plan.budgetBytes() + " bytes) cannot hold even two tokens of " + oneToken
                        + " bytes; raise it");
            }
        }
        if ("mlx".equals(backend)) {
            Optional<Path> lib = BackendSelector.discover(p.backend().mlx().library(), System.getenv(),
                    BackendSelector.DEFAULT_DIRS).library();
            lib.ifPresent(l -> MlxMemoryCheck.require(Mlx.open(l), dir, p, plans));
        }
        String id = p.model().id().isBlank() ? dir.toAbsolutePath().normalize().getFileName().toString()
                : p.model().id();
        return new Plan(dir, id, config, backend, plans);
    }

    /**
     * The head-dim check of the turbo lane's scheme, with the message that names the fix. (Bit widths are checked
     * when {@code tqserve.kv.scheme} is bound: {@link KvSchemeConverter}.)
     */
    static void checkTurboScheme(KvScheme scheme, int headDim) {
        switch (scheme) {
            case KvScheme.Turbo t -> {
                if (!KvLayout.TURBO_HEAD_DIMS.contains(headDim) || headDim % KvLayout.TURBO_GROUP != 0) {
                    String others = headDim % KvScheme.Uniform.GROUP == 0 ? "int8, int4 or bf16" : "bf16";
                    throw new StartupValidationException("head_dim " + headDim
                            + " is not supported by the turbo KV scheme (needs 64, 128, 256 or 512); "
                            + "set tqserve.kv.scheme to " + others
                            + ", set tqserve.lanes.turbo.enabled=false or serve another model");
                }
            }
            case KvScheme.Uniform u -> {
                if (headDim % KvScheme.Uniform.GROUP != 0) {
                    throw new StartupValidationException("head_dim " + headDim + " is not supported by the " + u.id()
                            + " KV scheme (needs a multiple of " + KvScheme.Uniform.GROUP + "); set tqserve.kv.scheme "
                            + "to another scheme, set tqserve.lanes.turbo.enabled=false or serve another model");
                }
            }
            case KvScheme.Bf16 b -> {
            }
        }
    }

    private static KvLayout layout(KvScheme scheme, ModelConfig c) {
        return KvLayout.of(scheme, c.numLayers(), c.numKvHeads(), c.headDim());
    }

    private static long budget(long bytes, String key) {
        if (bytes <= 0) {
            throw new StartupValidationException(key + " must be positive");
        }
        return bytes;
    }

    /**
     * Resolves the backend the loader will create: cpu, or mlx when an MLX-C library is found and loads (for
     * {@code auto}; {@code mlx} without one fails here, naming every place looked at).
     */
    /**
     * turbo-kernel=metal|cuda runs only on the mlx backend with a device of that language: refused here otherwise.
     */
    private static void checkTurboKernel(TqserveProperties.Backend b, String backend) {
        MlxOptions.TurboKernel asked = b.mlx().turboKernel();
        if (!asked.gpuKernel()) {
            return;
        }
        if (!backend.equals("mlx")) {
            throw new StartupValidationException(BackendSelector.kernelNeedsMlx(asked, "the backend is cpu "
                    + "(tqserve.backend.type=" + b.type().name().toLowerCase(java.util.Locale.ROOT) + ")"));
        }
        Mlx mlx = Mlx.open(BackendSelector.discover(b.mlx().library(), System.getenv(), BackendSelector.DEFAULT_DIRS)
                .library().orElseThrow());
        MlxBackend.kernelRefusal(mlx, asked).ifPresent(why -> {
            throw new StartupValidationException(why);
        });
    }

    private static String checkBackend(TqserveProperties.Backend b) {
        boolean vectorOff = "false".equalsIgnoreCase(System.getProperty(CpuBackend.VECTOR_PROPERTY, "true"));
        if (!vectorOff && !CpuBackend.vectorApiPresent()) {
            throw new StartupValidationException("the Vector API module jdk.incubator.vector is not present; "
                    + "start the JVM with --add-modules jdk.incubator.vector (./tqserve does), or run the scalar "
                    + "kernels on purpose with -D" + CpuBackend.VECTOR_PROPERTY + "=false");
        }
        if (b.type() == TqserveProperties.BackendType.CPU) {
            return "cpu";
        }
        BackendSelector.Discovery d = BackendSelector.discover(b.mlx().library(), System.getenv(),
                BackendSelector.DEFAULT_DIRS);
        if (d.library().isEmpty()) {
            if (b.type() == TqserveProperties.BackendType.MLX) {
                throw new StartupValidationException("tqserve.backend.type=mlx but no MLX-C library ("
                        + BackendSelector.libraryFileName() + ") was found; looked at: " + d.searchedText()
                        + ". Set tqserve.backend.mlx.library or " + BackendSelector.ENV
                        + ", or install MLX-C (macOS: brew install mlx-c)");
            }
            return "cpu";
        }
        try {
            Mlx.open(d.library().get()); // loaded once per process; the loader's backend reuses it
            return "mlx";
        } catch (RuntimeException e) {
            if (b.type() == TqserveProperties.BackendType.MLX) {
                throw new StartupValidationException("tqserve.backend.type=mlx: cannot load " + d.library().get()
                        + ": " + e.getMessage());
            }
            return "cpu";
        }
    }
}
