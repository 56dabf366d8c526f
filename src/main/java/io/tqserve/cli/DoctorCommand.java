package io.tqserve.cli;

import io.tqserve.backend.BackendSelector;
import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.backend.mlx.MlxBackend;
import io.tqserve.backend.mlx.MlxOptions;
import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.backend.mlx.ffm.MlxCustomKernel;
import io.tqserve.config.ConfigCheck;
import io.tqserve.config.StartupValidator;
import io.tqserve.config.TqserveProperties;
import io.tqserve.model.ModelConfig;
import io.tqserve.model.Safetensors;
import io.tqserve.model.WeightsInfo;
import io.tqserve.routing.LanePlan;
import io.tqserve.template.ChatTemplate;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * {@code tqserve doctor [--config FILE]}: checks this host, the model and the config file the server would use,
 * one line each ({@code ok} or {@code FAIL}, what was found, and for a failure what to do), on stdout; exit 0 only
 * when every check passes. The settings are the packaged defaults and the config file ({@code --config FILE}, else
 * {@link HostPaths#configFile()} when it exists), read as {@code config check} reads them.
 */
final class DoctorCommand {
    /** One check's line. */
    record Check(String name, boolean ok, String text) {
        String line() {
            return String.format("%-4s  %-7s %s", ok ? "ok" : "FAIL", name, text);
        }
    }

    /** What the checks look at beyond the settings: the environment, the JVM, the MLX library and memory. */
    record Host(HostPaths paths, boolean vectorApi, boolean nativeAccess, long physicalBytes, long maxHeapBytes) {
        static Host current() {
            long physical = ManagementFactory.getOperatingSystemMXBean()
                    instanceof com.sun.management.OperatingSystemMXBean os ? os.getTotalMemorySize() : 0;
            return new Host(HostPaths.current(), CpuBackend.vectorApiPresent(),
                    DoctorCommand.class.getModule().isNativeAccessEnabled(), physical, Runtime.getRuntime().maxMemory());
        }
    }

    private DoctorCommand() {
    }

    static int run(String[] args) {
        CliArgs a = new CliArgs(args, 1, Set.of("--config"), Set.of());
        Host host = Host.current();
        Path config = a.has("--config") ? host.paths().userPath(a.get("--config", "")) : host.paths().configFile();
        List<Check> checks = checks(host, config, a.has("--config"), TqserveMain.springCliLogging());
        checks.forEach(c -> System.out.println(c.line()));
        return checks.stream().allMatch(Check::ok) ? 0 : 1;
    }

    /** Every check, in the order they are printed. */
    static List<Check> checks(Host host, Path configFile, boolean configGiven, Map<String, Object> springLogging) {
        boolean fileExists = Files.isRegularFile(configFile);
        Optional<ConfigCheck.Inspection> inspected = ConfigCheck.inspect(fileExists ? configFile : null,
                springLogging);
        List<Check> out = new ArrayList<>();
        out.add(jdk(host));
        TqserveProperties props = inspected.map(ConfigCheck.Inspection::properties).orElse(null);
        Optional<Mlx> mlx = Optional.empty();
        if (props == null) {
            out.add(new Check("mlx", false, "not checked: the config file is not readable YAML (see config)"));
        } else {
            MlxResult m = mlx(props, host.paths().mac());
            out.add(m.check());
            mlx = m.mlx();
        }
        out.add(memory(host, props, mlx));
        out.add(props == null ? new Check("model", false, "not checked: the config file is not readable YAML")
                : model(Path.of(props.model().path())));
        out.add(fit(inspected, host));
        out.add(port(inspected));
        out.add(config(configFile, fileExists, configGiven, inspected));
        out.add(keys(inspected, host.paths().env()));
        return out;
    }

    static Check jdk(Host host) {
        Runtime.Version v = Runtime.version();
        List<String> missing = new ArrayList<>();
        if (!host.vectorApi()) {
            missing.add("--add-modules jdk.incubator.vector");
        }
        if (!host.nativeAccess()) {
            missing.add("--enable-native-access=ALL-UNNAMED");
        }
        String found = "Java " + v + " (" + System.getProperty("java.vendor", "?") + ") at "
                + System.getProperty("java.home") + ", heap max " + (host.maxHeapBytes() >> 20) + " MB";
        if (v.feature() < 25) {
            return new Check("jdk", false, found + "; fix: install a JDK 25 or newer (brew install openjdk) and "
                    + "point JAVA_HOME at it");
        }
        if (!missing.isEmpty()) {
            return new Check("jdk", false, found + " without " + String.join(" and ", missing) + "; fix: start "
                    + "through the tqserve launcher, which passes them (extra flags: TQSERVE_JAVA_OPTS)");
        }
        return new Check("jdk", true, found + ", Vector API and native access enabled");
    }

    private record MlxResult(Check check, Optional<Mlx> mlx) {
    }

    private static MlxResult mlx(TqserveProperties props, boolean mac) {
        TqserveProperties.BackendType type = props.backend().type();
        if (type == TqserveProperties.BackendType.CPU) {
            return new MlxResult(new Check("mlx", true, "not used: tqserve.backend.type=cpu"), Optional.empty());
        }
        BackendSelector.Discovery d = BackendSelector.discover(props.backend().mlx().library(), System.getenv(),
                BackendSelector.DEFAULT_DIRS);
        if (d.library().isEmpty()) {
            return new MlxResult(new Check("mlx", false, "no MLX-C library (" + BackendSelector.libraryFileName()
                    + ") found, so the server runs on the CPU; looked at " + d.searchedText() + "; fix: install "
                    + "MLX-C (brew install mlx-c) or set " + BackendSelector.ENV + " or tqserve.backend.mlx.library "
                    + "to it, or set tqserve.backend.type=cpu to serve on the CPU on purpose"), Optional.empty());
        }
        Mlx mlx;
        try {
            mlx = Mlx.open(d.library().get());
        } catch (RuntimeException e) {
            return new MlxResult(new Check("mlx", false, d.library().get() + " does not load: " + e.getMessage()
                    + "; fix: reinstall MLX-C (brew reinstall mlx-c) or point " + BackendSelector.ENV
                    + " at a working build"), Optional.empty());
        }
        boolean metal = MlxCustomKernel.metalAvailable(mlx);
        String found = d.library().get() + " on " + mlx.device() + (metal ? ", Metal available" : ", no Metal");
        if (mac && !metal) {
            return new MlxResult(new Check("mlx", false, found + "; fix: install an MLX-C built with Metal "
                    + "(brew install mlx-c) on Apple silicon"), Optional.of(mlx));
        }
        return new MlxResult(new Check("mlx", true, found), Optional.of(mlx));
    }

    private static Check memory(Host host, TqserveProperties props, Optional<Mlx> mlx) {
        String physical = "unified/physical memory " + (host.physicalBytes() >> 20) + " MB";
        if (mlx.isEmpty()) {
            return new Check("memory", true, physical + "; no MLX device, so no wired limit");
        }
        Mlx m = mlx.get();
        long device = MlxBackend.deviceMemory(m);
        MlxOptions options = props.backend().mlx().options();
        // the key MlxBackend applies a "recommended" wired limit from (MlxBackend.RECOMMENDED_KEY)
        var recommended = m.deviceInfoSize("max_recommended_working_set_size");
        long wired = options.wiredLimit() == MlxOptions.RECOMMENDED ? recommended.orElse(0L) : options.wiredLimit();
        return new Check("memory", true, physical + "; MLX may use " + (device >> 20) + " MB ("
                + MlxBackend.deviceMemorySource(m) + "); wired limit " + (wired > 0 ? (wired >> 20) + " MB" : "none")
                + " (tqserve.backend.mlx.wired-limit=" + props.backend().mlx().wiredLimit() + ")");
    }

    /** The model folder: config.json, the safetensors shards, the tokenizer, the chat template, the quantization. */
    static Check model(Path dir) {
        String fix = "; fix: set tqserve.model.path to a Hugging Face model folder (config.json, tokenizer.json, "
                + "*.safetensors)";
        if (!Files.isDirectory(dir)) {
            return new Check("model", false, dir.toAbsolutePath() + " is not a folder" + fix);
        }
        List<String> found = new ArrayList<>();
        ModelConfig c;
        try {
            c = ModelConfig.load(dir);
            found.add(c.architecture() + ", " + c.numLayers() + " layers, head_dim " + c.headDim());
        } catch (IOException | RuntimeException e) {
            return new Check("model", false, dir + ": config.json: " + e.getMessage() + fix);
        }
        try (Safetensors st = Safetensors.open(dir)) {
            found.add(st.tensors().size() + " tensors");
        } catch (IOException | RuntimeException e) {
            return new Check("model", false, dir + ": safetensors: " + e.getMessage() + "; fix: download the "
                    + "missing or damaged shards again");
        }
        if (!Files.isRegularFile(dir.resolve("tokenizer.json"))) {
            return new Check("model", false, dir + ": no tokenizer.json; fix: copy it from the model's repository");
        }
        found.add("tokenizer.json");
        try {
            if (ChatTemplate.load(dir).isEmpty()) {
                return new Check("model", false, dir + ": no chat template, so /v1/chat/completions cannot be "
                        + "served; fix: add chat_template.jinja or tokenizer_config.json's chat_template");
            }
        } catch (RuntimeException e) {
            return new Check("model", false, dir + ": the chat template does not compile: " + e.getMessage()
                    + "; fix: use the model's published template");
        }
        found.add("chat template");
        try {
            found.add("weights " + WeightsInfo.read(dir).format());
        } catch (IOException | RuntimeException e) {
            return new Check("model", false, dir + ": quantization: " + e.getMessage() + fix);
        }
        return new Check("model", true, dir.toAbsolutePath().normalize() + ": " + String.join(", ", found));
    }

    private static Check fit(Optional<ConfigCheck.Inspection> inspected, Host host) {
        if (inspected.isEmpty()) {
            return new Check("fit", false, "not checked: the config file is not readable YAML");
        }
        ConfigCheck.Inspection i = inspected.get();
        if (i.memory().isPresent()) {
            return new Check("fit", false, i.memory().get().message());
        }
        StartupValidator.Plan plan = i.plan();
        if (plan == null) {
            String why = i.serving().map(ConfigCheck.Problem::message).orElse("");
            boolean device = why.contains("of MLX device memory");
            return new Check("fit", false, device ? why : "not checked: " + why);
        }
        long kv = plan.plans().stream().mapToLong(LanePlan::budgetBytes).sum();
        long weights;
        try {
            weights = WeightsInfo.read(plan.modelDir()).bytes();
        } catch (IOException | RuntimeException e) {
            return new Check("fit", false, "the weights cannot be read: " + e.getMessage());
        }
        return new Check("fit", true, "weights " + (weights >> 20) + " MB + KV budgets " + (kv >> 20) + " MB fit ("
                + (host.physicalBytes() >> 20) + " MB memory, heap max " + (host.maxHeapBytes() >> 20) + " MB"
                + ("mlx".equals(plan.backend()) ? ", and the MLX device" : "") + ")");
    }

    private static Check port(Optional<ConfigCheck.Inspection> inspected) {
        if (inspected.isEmpty()) {
            return new Check("port", false, "not checked: the config file is not readable YAML");
        }
        ConfigCheck.Inspection i = inspected.get();
        String where = (i.address() == null ? "*" : i.address()) + ":" + i.port();
        if (i.port() == 0) {
            return new Check("port", true, where + ": any free port (server.port=0)");
        }
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(false);
            s.bind(i.address() == null ? new InetSocketAddress(i.port())
                    : new InetSocketAddress(InetAddress.getByName(i.address()), i.port()));
            return new Check("port", true, where + " is free");
        } catch (IOException e) {
            return new Check("port", false, where + " cannot be bound (" + e.getMessage() + "): another server "
                    + "(tqserve service status?) uses it; fix: stop it or set server.port");
        }
    }

    private static Check config(Path file, boolean exists, boolean given, Optional<ConfigCheck.Inspection> i) {
        if (!exists) {
            return new Check("config", !given, file + " does not exist" + (given ? "; fix: tqserve config init --out "
                    + file : ", so the packaged defaults apply (tqserve config init writes a starter)"));
        }
        if (i.isEmpty()) {
            return new Check("config", false, file + " is not readable YAML; fix: tqserve config check " + file
                    + " names the line");
        }
        List<ConfigCheck.Problem> problems = i.get().problems();
        if (problems.isEmpty()) {
            return new Check("config", true, file + " is valid");
        }
        return new Check("config", false, problems.size() + " problem(s), first " + problems.get(0).render(file)
                + "; fix: tqserve config check " + file + " lists them by line");
    }

    private static Check keys(Optional<ConfigCheck.Inspection> inspected, Map<String, String> env) {
        if (inspected.isEmpty()) {
            return new Check("keys", false, "not checked: the config file is not readable YAML");
        }
        ConfigCheck.Inspection i = inspected.get();
        boolean keys = !i.properties().api().keys().isEmpty()
                || !env.getOrDefault("TQSERVE_API_KEYS", "").isBlank();
        boolean loopback;
        try {
            loopback = i.address() != null && InetAddress.getByName(i.address()).isLoopbackAddress();
        } catch (IOException e) {
            return new Check("keys", false, "server.address=" + i.address() + " does not resolve: "
                    + e.getMessage() + "; fix: set server.address to an address of this host");
        }
        String where = i.address() == null ? "every interface (server.address unset)" : i.address();
        if (keys) {
            return new Check("keys", true, "API keys set; listening on " + where);
        }
        if (loopback) {
            return new Check("keys", true, "no API keys, listening on " + where + " only");
        }
        return new Check("keys", false, "no API keys while listening on " + where + "; fix: set tqserve.api.keys "
                + "(or TQSERVE_API_KEYS), or server.address=127.0.0.1");
    }
}
