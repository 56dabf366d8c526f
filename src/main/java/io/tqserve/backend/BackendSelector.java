package io.tqserve.backend;

import io.tqserve.backend.cpu.CpuBackend;
import io.tqserve.backend.mlx.MlxBackend;
import io.tqserve.backend.mlx.MlxOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * Chooses the compute backend from {@code tqserve.backend.type} ({@code auto | cpu | mlx}) and
 * {@code tqserve.backend.mlx.library}. The MLX-C library is looked for, in order: the setting (a file, or a
 * folder holding {@code libmlxc.dylib}/{@code libmlxc.so}), the {@code MLXC_LIBRARY} environment variable (same
 * forms), {@code /opt/homebrew/lib}, {@code /usr/local/lib}. {@code auto} without a library falls back to the
 * CPU backend, and the reason names every place it looked; {@code mlx} without one fails naming them.
 * Plain Java: the serving configuration and the command line both call {@link #select}.
 */
public final class BackendSelector {
    /** Environment variable naming the MLX-C library (file or folder). */
    public static final String ENV = "MLXC_LIBRARY";
    /** Folders searched after the setting and the environment variable. */
    public static final List<Path> DEFAULT_DIRS = List.of(Path.of("/opt/homebrew/lib"), Path.of("/usr/local/lib"));

    /** {@code tqserve.backend.type}. */
    public enum Type {
        AUTO, CPU, MLX;

        public static Type parse(String s) {
            return switch (s == null ? "auto" : s.trim().toLowerCase(Locale.ROOT)) {
                case "auto", "" -> AUTO;
                case "cpu" -> CPU;
                case "mlx" -> MLX;
                default -> throw new IllegalArgumentException("backend type '" + s + "' is not one of auto, cpu, mlx");
            };
        }
    }

    /** The chosen backend and one line saying why (to log at startup and show in /actuator/info). */
    public record Selection(ComputeBackend backend, String reason) {
    }

    /**
     * Where the library was found, if anywhere, and every place looked at, in order.
     *
     * @param library  the library file
     * @param searched each candidate file, described ("setting: /x/libmlxc.so (absent)")
     */
    public record Discovery(Optional<Path> library, List<String> searched) {
        public String searchedText() {
            return String.join("; ", searched);
        }
    }

    private BackendSelector() {
    }

    /**
     * Selects with the process environment.
     *
     * @param type            auto, cpu or mlx
     * @param threads         CPU threads (0 = physical cores)
     * @param librarySetting  {@code tqserve.backend.mlx.library}, or null/blank when unset
     * @throws IllegalStateException for {@code mlx} when no library is found or it fails to load
     */
    public static Selection select(String type, int threads, String librarySetting) {
        return select(type, threads, librarySetting, MlxOptions.DEFAULTS);
    }

    /** As {@link #select(String, int, String)}, with the MLX backend's options ({@code tqserve.backend.mlx.*}). */
    public static Selection select(String type, int threads, String librarySetting, MlxOptions mlxOptions) {
        return select(Type.parse(type), threads, librarySetting, System.getenv(), DEFAULT_DIRS, mlxOptions);
    }

    static Selection select(Type type, int threads, String setting, Map<String, String> env, List<Path> dirs) {
        return select(type, threads, setting, env, dirs, MlxOptions.DEFAULTS);
    }

    static Selection select(Type type, int threads, String setting, Map<String, String> env, List<Path> dirs,
            MlxOptions mlxOptions) {
        Selection s = choose(type, threads, setting, env, dirs, mlxOptions);
        if (mlxOptions.turboKernel().gpuKernel() && !(s.backend() instanceof MlxBackend)) {
            s.backend().close();
            throw new IllegalStateException(kernelNeedsMlx(mlxOptions.turboKernel(), s.reason()));
        }
        return s;
    }

    /** Why turbo-kernel=metal is refused when the backend (described by {@code backend}) is not MLX. */
    public static String metalNeedsMlx(String backend) {
        return kernelNeedsMlx(MlxOptions.TurboKernel.METAL, backend);
    }

    /** Why turbo-kernel=metal|cuda is refused when the backend (described by {@code backend}) is not MLX. */
    public static String kernelNeedsMlx(MlxOptions.TurboKernel asked, String backend) {
        String device = asked == MlxOptions.TurboKernel.METAL ? "a Metal device" : "a CUDA GPU";
        return "tqserve.backend.mlx.turbo-kernel=" + asked.wireName() + " needs the mlx backend on " + device
                + ", but " + backend + "; use tqserve.backend.mlx.turbo-kernel=auto or ops";
    }

    private static Selection choose(Type type, int threads, String setting, Map<String, String> env, List<Path> dirs,
            MlxOptions mlxOptions) {
        if (type == Type.CPU) {
            CpuBackend cpu = CpuBackend.create(threads);
            return new Selection(cpu, "backend cpu (requested): " + cpu.describe());
        }
        Discovery d = discover(setting, env, dirs);
        if (d.library().isEmpty()) {
            String where = "no MLX-C library (" + libraryFileName() + ") found; looked at: " + d.searchedText();
            if (type == Type.MLX) {
                throw new IllegalStateException("backend mlx requested but " + where
                        + ". Install MLX-C (macOS: brew install mlx-c) or point tqserve.backend.mlx.library or "
                        + ENV + " at libmlxc");
            }
            CpuBackend cpu = CpuBackend.create(threads);
            return new Selection(cpu, "backend auto -> cpu: " + where + "; " + cpu.describe());
        }
        Path lib = d.library().get();
        try {
            MlxBackend mlx = MlxBackend.open(lib, threads, mlxOptions);
            return new Selection(mlx, "backend " + type.name().toLowerCase(Locale.ROOT) + " -> " + mlx.describe());
        } catch (RuntimeException e) {
            if (type == Type.MLX) {
                throw new IllegalStateException("backend mlx: cannot use " + lib + ": " + e.getMessage(), e);
            }
            CpuBackend cpu = CpuBackend.create(threads);
            return new Selection(cpu, "backend auto -> cpu: found " + lib + " but it failed to load (" + e.getMessage()
                    + "); " + cpu.describe());
        }
    }

    /** Looks for the library in discovery order; never loads it. */
    public static Discovery discover(String setting, Map<String, String> env, List<Path> dirs) {
        List<String> searched = new ArrayList<>();
        String name = libraryFileName();
        List<Candidate> candidates = new ArrayList<>();
        if (setting != null && !setting.isBlank()) {
            candidates.add(new Candidate("tqserve.backend.mlx.library", resolve(Path.of(setting.trim()), name)));
        } else {
            searched.add("tqserve.backend.mlx.library (unset)");
        }
        String fromEnv = env.get(ENV);
        if (fromEnv != null && !fromEnv.isBlank()) {
            candidates.add(new Candidate(ENV, resolve(Path.of(fromEnv.trim()), name)));
        } else {
            searched.add(ENV + " (unset)");
        }
        for (Path dir : dirs) {
            candidates.add(new Candidate(dir.toString(), dir.resolve(name)));
        }
        for (Candidate c : candidates) {
            if (Files.isRegularFile(c.file())) {
                searched.add(c.source() + ": " + c.file() + " (found)");
                return new Discovery(Optional.of(c.file()), List.copyOf(searched));
            }
            searched.add(c.source() + ": " + c.file() + " (absent)");
        }
        return new Discovery(Optional.empty(), List.copyOf(searched));
    }

    private record Candidate(String source, Path file) {
    }

    /** A folder means the library file inside it. */
    private static Path resolve(Path p, String name) {
        return Files.isDirectory(p) ? p.resolve(name) : p;
    }

    /** {@code libmlxc.dylib} on macOS, {@code libmlxc.so} on Linux. */
    public static String libraryFileName() {
        return System.mapLibraryName("mlxc");
    }
}
