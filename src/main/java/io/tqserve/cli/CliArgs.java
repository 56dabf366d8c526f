package io.tqserve.cli;

import io.tqserve.backend.mlx.MlxOptions;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/** {@code --name value} and {@code --flag} options of a verb; unknown options are errors. */
final class CliArgs {
    private final Map<String, String> values = new HashMap<>();
    private final Set<String> flags = new HashSet<>();

    CliArgs(String[] args, int from, Set<String> valueOptions, Set<String> flagOptions) {
        for (int i = from; i < args.length; i++) {
            String a = args[i];
            String name = a;
            String inline = null;
            int eq = a.indexOf('=');
            if (a.startsWith("--") && eq > 0) {
                name = a.substring(0, eq);
                inline = a.substring(eq + 1);
            }
            if (valueOptions.contains(name)) {
                if (inline != null) {
                    values.put(name, inline);
                } else if (i + 1 < args.length) {
                    values.put(name, args[++i]);
                } else {
                    throw new IllegalArgumentException(name + " needs a value");
                }
            } else if (flagOptions.contains(name) && inline == null) {
                flags.add(name);
            } else {
                throw new IllegalArgumentException("unknown option " + a + " (options: " + valueOptions + " " + flagOptions + ")");
            }
        }
    }

    /** {@code --mlx-dtype} (default native) and {@code --mlx-turbo-kernel} (default auto) as MLX options. */
    MlxOptions mlxOptions() {
        return MlxOptions.DEFAULTS.withDtype(MlxOptions.Dtype.parse(get("--mlx-dtype", "native")))
                .withTurboKernel(MlxOptions.TurboKernel.parse(get("--mlx-turbo-kernel", "auto")));
    }

    String get(String name, String def) {
        return values.getOrDefault(name, def);
    }

    String require(String name) {
        String v = values.get(name);
        if (v == null) {
            throw new IllegalArgumentException(name + " is required");
        }
        return v;
    }

    int getInt(String name, int def) {
        String v = values.get(name);
        try {
            return v == null ? def : Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " must be an integer, got " + v);
        }
    }

    float getFloat(String name, float def) {
        String v = values.get(name);
        try {
            return v == null ? def : Float.parseFloat(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " must be a number, got " + v);
        }
    }

    boolean has(String flag) {
        return flags.contains(flag) || values.containsKey(flag);
    }
}
