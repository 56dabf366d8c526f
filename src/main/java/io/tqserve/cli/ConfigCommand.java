package io.tqserve.cli;

import io.tqserve.backend.BackendSelector;
import io.tqserve.backend.mlx.ffm.Mlx;
import io.tqserve.config.ConfigCheck;
import io.tqserve.kv.KvLayout;
import io.tqserve.kv.KvScheme;
import io.tqserve.model.ModelConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * {@code tqserve config init [--out FILE|-] [--model DIR] [--port N] [--force]} writes a commented starter config
 * file for this host; {@code tqserve config check [FILE]} validates one without starting the server
 * ({@link ConfigCheck}). Both default to the config file the server reads ({@link HostPaths#configFile()}).
 */
final class ConfigCommand {
    static final String USAGE = "usage: tqserve config init [--out FILE|-] [--model DIR] [--port N] [--force]\n"
            + "       tqserve config check [FILE]";

    private ConfigCommand() {
    }

    static int run(String[] args) throws IOException {
        String sub = args.length > 1 ? args[1] : "";
        HostPaths paths = HostPaths.current();
        return switch (sub) {
            case "init" -> init(new CliArgs(args, 2, Set.of("--out", "--model", "--port"), Set.of("--force")), paths);
            case "check" -> {
                if (args.length > 3) {
                    throw new IllegalArgumentException(USAGE);
                }
                yield check(args.length == 3 ? paths.userPath(args[2]) : paths.configFile());
            }
            default -> throw new IllegalArgumentException(USAGE);
        };
    }

    /** Prints every problem of the file on stdout, or "FILE: ok"; exit 0 only when there is none. */
    static int check(Path file) {
        if (!Files.isRegularFile(file)) {
            System.out.println(file + ": no such file (tqserve config init --out " + file + " writes a starter)");
            return 1;
        }
        List<ConfigCheck.Problem> problems = ConfigCheck.check(file, TqserveMain.springCliLogging());
        if (problems.isEmpty()) {
            System.out.println(file + ": ok");
            return 0;
        }
        problems.forEach(p -> System.out.println(p.render(file)));
        return 1;
    }

    private static int init(CliArgs a, HostPaths paths) throws IOException {
        // a --model given by the user is relative to where they ran the launcher; the embedded default to the
        // launcher's own folder (the JVM's working directory)
        Path model = a.has("--model") ? paths.userPath(a.get("--model", "")) : Path.of(TqserveMain.DEFAULT_MODEL)
                .toAbsolutePath().normalize();
        int port = a.getInt("--port", 8080);
        String text = starter(model, port, detectBackend(), new SecureRandom());
        String out = a.get("--out", paths.configFile().toString());
        if (out.equals("-")) {
            System.out.print(text);
            return 0;
        }
        Path file = paths.userPath(out);
        if (Files.exists(file) && !a.has("--force")) {
            throw new IllegalArgumentException(file + " exists; check it with tqserve config check " + file
                    + ", or overwrite it with --force");
        }
        if (file.getParent() != null) {
            Files.createDirectories(file.getParent());
        }
        Files.writeString(file, text, StandardCharsets.UTF_8);
        System.out.println(file);
        System.err.println("tqserve: wrote " + file + "; check it with: tqserve config check " + file);
        return 0;
    }

    /** The backend {@code auto} picks on this host and why: mlx when an MLX-C library loads, else cpu. */
    record Backend(String type, String why) {
    }

    static Backend detectBackend() {
        BackendSelector.Discovery d = BackendSelector.discover("", System.getenv(), BackendSelector.DEFAULT_DIRS);
        if (d.library().isEmpty()) {
            return new Backend("cpu", "no MLX-C library (" + BackendSelector.libraryFileName() + ") found; looked at "
                    + d.searchedText());
        }
        try {
            Mlx mlx = Mlx.open(d.library().get());
            return new Backend("mlx", d.library().get() + " loads and runs on " + mlx.device());
        } catch (RuntimeException e) {
            return new Backend("cpu", d.library().get() + " does not load: " + e.getMessage());
        }
    }

    /** The turbo lane's scheme for a head dim: turbo:k8v3 where TurboQuant serves it, else int8, else bf16. */
    static String schemeFor(int headDim) {
        if (KvLayout.TURBO_HEAD_DIMS.contains(headDim) && headDim % KvLayout.TURBO_GROUP == 0) {
            return "turbo:k8v3";
        }
        return headDim % KvScheme.Uniform.GROUP == 0 ? "int8" : "bf16";
    }

    /** The starter file's text. */
    static String starter(Path model, int port, Backend backend, SecureRandom random) {
        Optional<Integer> headDim;
        try {
            headDim = Optional.of(ModelConfig.load(model).headDim());
        } catch (IOException | RuntimeException e) {
            throw new IllegalArgumentException("cannot read the model's config.json in " + model + ": "
                    + e.getMessage() + "; name a Hugging Face model folder with --model DIR");
        }
        String scheme = schemeFor(headDim.get());
        byte[] key = new byte[24];
        random.nextBytes(key);
        return """
                # tqserve settings, written by `tqserve config init` for this host.
                # Read in this order, later wins: the packaged defaults, this file, TQSERVE_* environment variables,
                # --key=value arguments. Every key: docs/configuration.md. After a change, run
                #   tqserve config check <this file>
                # (the server refuses unknown keys and values it cannot serve, naming the key).

                server:
                  port: %d
                  # loopback only; to serve other machines remove this line (or set 0.0.0.0) and set an API key below
                  address: 127.0.0.1

                tqserve:
                  model:
                    # a Hugging Face model folder: config.json, tokenizer.json, *.safetensors (MLX-quantized ones too)
                    path: %s
                  backend:
                    # %s
                    # auto = mlx when the MLX-C library loads, else cpu
                    type: %s
                  kv:
                    # the turbo lane's KV cache; head_dim %d: %s (turbo:k<bits>v<bits>, int8, int4 or bf16)
                    scheme: %s
                  lanes:
                    turbo:
                      kv-budget: 256MB     # one long sequence at a time: this caps its context
                    batched:
                      kv-budget: 512MB     # all batched sequences together
                      max-batch: 8
                  api:
                    # API keys: with one set, every request needs "Authorization: Bearer <key>" (health stays open).
                    # Needed before listening beyond loopback; a random one for this host (or TQSERVE_API_KEYS):
                    #   keys: [%s]
                    keys: []
                """.formatted(port, yamlString(model.toString()), backend.why().replace('\n', ' '), backend.type(),
                headDim.get(), scheme.startsWith("turbo") ? "TurboQuant serves it" : "TurboQuant does not serve it",
                scheme, "tq-" + HexFormat.of().formatHex(key));
    }

    /** A YAML double-quoted string. */
    private static String yamlString(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }
}
