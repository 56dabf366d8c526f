package io.tqserve.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * {@code tqserve service install|uninstall|status [--config FILE] [--launcher PATH]}: the server as a per-user
 * service. On macOS a LaunchAgent ({@code ~/Library/LaunchAgents/io.tqserve.plist}, from the template
 * {@code deploy/macos/io.tqserve.plist}) loaded with {@code launchctl bootstrap gui/<uid>}, removed with
 * {@code bootout}, reported with {@code print}; elsewhere a systemd user unit
 * ({@code ~/.config/systemd/user/tqserve.service}, from {@code deploy/systemd/tqserve.service}) driven by
 * {@code systemctl --user} when systemctl is on the PATH. The service runs the launcher with
 * {@code serve --config FILE --service}: the config file, rolling log files in {@link HostPaths#logDir()}. A missing
 * config file is written first, as {@code config init} would. The commands run through a {@link Runner}, so tests
 * see the exact argv without running them.
 */
final class ServiceCommand {
    static final String USAGE = "usage: tqserve service install|uninstall|status [--config FILE] [--launcher PATH]";
    /** The systemd unit's name. */
    static final String UNIT = "tqserve.service";

    /** Runs one command; its exit code and its output (stdout and stderr together). */
    interface Runner {
        Result run(List<String> argv) throws IOException;
    }

    record Result(int exit, String output) {
    }

    /** The host side of the command: paths, command runner, user id, systemctl's presence, the launcher. */
    record Host(HostPaths paths, Runner runner, long uid, boolean systemctl, String launcher) {
    }

    private ServiceCommand() {
    }

    static int run(String[] args) throws IOException {
        HostPaths paths = HostPaths.current();
        String launcher = paths.env().get("TQSERVE_LAUNCHER");
        return run(args, new Host(paths, ServiceCommand::exec, new com.sun.security.auth.module.UnixSystem().getUid(),
                onPath("systemctl", paths.env().get("PATH")), launcher), System.out, System.err);
    }

    static int run(String[] args, Host host, PrintStream out, PrintStream err) throws IOException {
        String sub = args.length > 1 ? args[1] : "";
        CliArgs a = new CliArgs(args, Math.min(2, args.length), Set.of("--config", "--launcher"), Set.of());
        HostPaths paths = host.paths();
        Path config = a.has("--config") ? paths.userPath(a.get("--config", "")) : paths.configFile();
        return switch (sub) {
            case "install" -> install(host, config, a.get("--launcher", host.launcher()), out, err);
            case "uninstall" -> uninstall(host, out, err);
            case "status" -> status(host, config, out);
            default -> throw new IllegalArgumentException(USAGE);
        };
    }

    private static int install(Host host, Path config, String launcherGiven, PrintStream out, PrintStream err)
            throws IOException {
        if (launcherGiven == null || launcherGiven.isBlank()) {
            throw new IllegalArgumentException("the launcher to run is unknown: run this through the tqserve "
                    + "launcher script, or pass --launcher PATH");
        }
        Path launcher = host.paths().userPath(launcherGiven);
        if (!Files.isExecutable(launcher)) {
            throw new IllegalArgumentException("--launcher " + launcher + " is not an executable file");
        }
        if (!Files.exists(config)) {
            Files.createDirectories(config.getParent());
            Files.writeString(config, ConfigCommand.starter(Path.of(TqserveMain.DEFAULT_MODEL).toAbsolutePath()
                    .normalize(), 8080, ConfigCommand.detectBackend(), new SecureRandom()), StandardCharsets.UTF_8);
            err.println("tqserve: wrote a starter config file " + config + " (tqserve config check " + config + ")");
        }
        Path logs = host.paths().logDir();
        Files.createDirectories(logs);
        Path file = host.paths().serviceFile();
        Files.createDirectories(file.getParent());
        Files.writeString(file, definition(host.paths().mac(), launcher, config, logs), StandardCharsets.UTF_8);
        out.println(file);
        if (host.paths().mac()) {
            String domain = "gui/" + host.uid();
            host.runner().run(List.of("launchctl", "bootout", domain + "/" + HostPaths.LABEL)); // a loaded older one
            return report(host.runner().run(List.of("launchctl", "bootstrap", domain, file.toString())), err,
                    "launchctl bootstrap");
        }
        if (!host.systemctl()) {
            err.println("tqserve: systemctl is not on the PATH; start the unit " + file + " with your service manager");
            return 0;
        }
        int code = report(host.runner().run(List.of("systemctl", "--user", "daemon-reload")), err, "systemctl");
        return code != 0 ? code
                : report(host.runner().run(List.of("systemctl", "--user", "enable", "--now", UNIT)), err, "systemctl");
    }

    private static int uninstall(Host host, PrintStream out, PrintStream err) throws IOException {
        Path file = host.paths().serviceFile();
        if (host.paths().mac()) {
            Result r = host.runner().run(List.of("launchctl", "bootout", "gui/" + host.uid() + "/" + HostPaths.LABEL));
            if (r.exit() != 0) {
                err.println("tqserve: launchctl bootout: " + r.output().strip() + " (not loaded)");
            }
        } else if (host.systemctl()) {
            Result r = host.runner().run(List.of("systemctl", "--user", "disable", "--now", UNIT));
            if (r.exit() != 0) {
                err.println("tqserve: systemctl: " + r.output().strip());
            }
        }
        boolean removed = Files.deleteIfExists(file);
        if (!host.paths().mac() && host.systemctl()) {
            host.runner().run(List.of("systemctl", "--user", "daemon-reload"));
        }
        out.println(removed ? "removed " + file : "no service file " + file);
        return 0;
    }

    /** The service file, config file and log folder, and the service manager's report; exit 0 when running. */
    private static int status(Host host, Path config, PrintStream out) throws IOException {
        Path file = host.paths().serviceFile();
        out.println("service file: " + file + (Files.exists(file) ? "" : " (not installed)"));
        out.println("config file: " + config + (Files.exists(config) ? "" : " (missing)"));
        out.println("logs: " + host.paths().logDir().resolve("tqserve.log"));
        Result r;
        if (host.paths().mac()) {
            r = host.runner().run(List.of("launchctl", "print", "gui/" + host.uid() + "/" + HostPaths.LABEL));
        } else if (host.systemctl()) {
            r = host.runner().run(List.of("systemctl", "--user", "status", "--no-pager", UNIT));
        } else {
            out.println("state: unknown (systemctl is not on the PATH)");
            return 3;
        }
        out.print(r.output().endsWith("\n") || r.output().isEmpty() ? r.output() : r.output() + "\n");
        return r.exit() == 0 ? 0 : 3;
    }

    private static int report(Result r, PrintStream err, String what) {
        if (r.exit() != 0) {
            err.println("tqserve: " + what + " failed (exit " + r.exit() + "): " + r.output().strip());
            return 1;
        }
        return 0;
    }

    /** The LaunchAgent plist or the systemd unit, from the packaged template of deploy/. */
    static String definition(boolean mac, Path launcher, Path config, Path logs) {
        String template = template(mac ? "io.tqserve.plist" : UNIT);
        if (mac) {
            return template.replace("@LAUNCHER@", xml(launcher.toString())).replace("@CONFIG@", xml(config.toString()))
                    .replace("@LOG_DIR@", xml(logs.toString()));
        }
        return template.replace("@LAUNCHER@", unit(launcher.toString())).replace("@CONFIG@", unit(config.toString()))
                .replace("@LOG_DIR@", unit(logs.toString()));
    }

    /** A template of deploy/macos or deploy/systemd, which the build packages under io/tqserve/cli/service/. */
    static String template(String name) {
        try (InputStream in = ServiceCommand.class.getResourceAsStream("service/" + name)) {
            if (in == null) {
                throw new IllegalStateException("the service template " + name + " is not in this build");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String xml(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }

    /** A path inside a double-quoted systemd word: backslash and quote escaped, % doubled (specifiers). */
    private static String unit(String s) {
        return s.replace("\\", "\\\\").replace("\"", "\\\"").replace("%", "%%");
    }

    static boolean onPath(String tool, String path) {
        if (path == null) {
            return false;
        }
        for (String dir : path.split(":")) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, tool))) {
                return true;
            }
        }
        return false;
    }

    /** Runs a command of the service manager: 60 s at most, output captured. */
    private static Result exec(List<String> argv) throws IOException {
        Process p = new ProcessBuilder(new ArrayList<>(argv)).redirectErrorStream(true).start();
        p.getOutputStream().close();
        try {
            byte[] output = p.getInputStream().readAllBytes();
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return new Result(124, String.join(" ", argv) + " did not finish in 60 s");
            }
            return new Result(p.exitValue(), new String(output, StandardCharsets.UTF_8));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            p.destroyForcibly();
            throw new IOException("interrupted", e);
        }
    }
}
