package io.tqserve.cli;

import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;

/**
 * Where tqserve keeps its files on this host: the config file, the service-mode log folder, the service definition
 * (LaunchAgent on macOS, systemd user unit elsewhere). {@code TQSERVE_HOME} moves the config folder,
 * {@code TQSERVE_LOG_DIR} the log folder; the XDG variables apply on Linux.
 *
 * @param mac  macOS rules (else the XDG base-directory rules)
 * @param home the user's home folder
 * @param env  the environment
 */
record HostPaths(boolean mac, Path home, Map<String, String> env) {
    /** The file name of the config file inside its folder. */
    static final String CONFIG_NAME = "application.yml";
    /** The launchd label of the agent and the daemon, also the plist's file name without .plist. */
    static final String LABEL = "io.tqserve";

    static HostPaths current() {
        return new HostPaths(isMac(System.getProperty("os.name", "")), Path.of(System.getProperty("user.home")),
                System.getenv());
    }

    static boolean isMac(String osName) {
        return osName.toLowerCase(Locale.ROOT).startsWith("mac");
    }

    /** The config folder: $TQSERVE_HOME, else ~/Library/Application Support/tqserve or $XDG_CONFIG_HOME/tqserve. */
    Path configDir() {
        String th = env.get("TQSERVE_HOME");
        if (th != null && !th.isBlank()) {
            return Path.of(th);
        }
        return mac ? home.resolve("Library/Application Support/tqserve") : xdg("XDG_CONFIG_HOME", ".config")
                .resolve("tqserve");
    }

    Path configFile() {
        return configDir().resolve(CONFIG_NAME);
    }

    /** Service-mode logs: $TQSERVE_LOG_DIR, else ~/Library/Logs/tqserve or $XDG_STATE_HOME/tqserve/logs. */
    Path logDir() {
        String d = env.get("TQSERVE_LOG_DIR");
        if (d != null && !d.isBlank()) {
            return Path.of(d);
        }
        return mac ? home.resolve("Library/Logs/tqserve") : xdg("XDG_STATE_HOME", ".local/state").resolve("tqserve/logs");
    }

    /** The service definition {@code service install} writes. */
    Path serviceFile() {
        return mac ? home.resolve("Library/LaunchAgents/" + LABEL + ".plist")
                : xdg("XDG_CONFIG_HOME", ".config").resolve("systemd/user/tqserve.service");
    }

    /** An XDG base directory: the variable when it is an absolute path (the specification ignores others). */
    private Path xdg(String variable, String fallback) {
        String v = env.get(variable);
        return v != null && v.startsWith("/") ? Path.of(v) : home.resolve(fallback);
    }

    /**
     * A path given on the command line, resolved against the folder the user ran the launcher in
     * ({@code TQSERVE_CWD}: the launcher changes into its own folder before starting the JVM).
     */
    Path userPath(String given) {
        Path p = Path.of(given);
        String cwd = env.get("TQSERVE_CWD");
        return p.isAbsolute() || cwd == null || cwd.isBlank() ? p.toAbsolutePath().normalize()
                : Path.of(cwd).resolve(p).normalize();
    }
}
