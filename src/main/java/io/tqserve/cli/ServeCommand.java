package io.tqserve.cli;

import io.tqserve.config.TqserveApplication;
import io.tqserve.routing.ServingRuntime;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.LoggerFactory;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.context.event.ApplicationEnvironmentPreparedEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.PropertySource;

/**
 * {@code ./tqserve [serve] [--config FILE] [--service] [--key=value ...]}: starts the Spring Boot application.
 * Settings come, lowest first, from the packaged application.yml, the config file ({@code --config FILE}, else
 * {@link HostPaths#configFile()} when it exists), environment variables and Spring-style arguments
 * ({@code --server.port=9000 --tqserve.kv.scheme=turbo:k4v2}); the config file is handed to Spring Boot as
 * {@code spring.config.additional-location}, so Spring's own ordering applies. {@code --service} (what the
 * LaunchAgent, the systemd unit and the Homebrew service pass) logs to rolling files in {@link HostPaths#logDir()}
 * instead of the console. The HTTP port opens at once (readiness DOWN) while the model loads in the background; if
 * loading fails the server shuts down with exit code 1.
 */
final class ServeCommand {
    /** Service-mode log file caps (Spring Boot's Logback rolling policy); a config file may change them. */
    static final String MAX_FILE_SIZE = "10MB";
    static final String MAX_HISTORY = "7";
    static final String TOTAL_SIZE_CAP = "100MB";

    private ServeCommand() {
    }

    /** What the command line says about where settings and logs go, and the arguments left for Spring. */
    record Launch(Map<String, Object> defaults, String[] springArgs) {
        static Launch of(String[] args, HostPaths paths) {
            List<String> rest = new ArrayList<>();
            String config = null;
            boolean service = false;
            int from = args.length > 0 && args[0].equals("serve") ? 1 : 0;
            for (int i = from; i < args.length; i++) {
                String a = args[i];
                if (a.equals("--config")) {
                    if (i + 1 == args.length) {
                        throw new IllegalArgumentException("--config needs a file");
                    }
                    config = args[++i];
                } else if (a.startsWith("--config=")) {
                    config = a.substring("--config=".length());
                } else if (a.equals("--service")) {
                    service = true;
                } else {
                    rest.add(a);
                }
            }
            Map<String, Object> defaults = new LinkedHashMap<>();
            if (config != null) {
                Path file = paths.userPath(config);
                if (!Files.isRegularFile(file)) {
                    throw new IllegalArgumentException("--config " + file + ": no such file (tqserve config init "
                            + "--out " + file + " writes a starter)");
                }
                defaults.put("spring.config.additional-location", "file:" + file);
            } else {
                defaults.put("spring.config.additional-location", "optional:file:" + paths.configFile());
            }
            if (service) {
                Path logs = paths.logDir();
                defaults.put("logging.file.name", logs.resolve("tqserve.log").toString());
                defaults.put("logging.logback.rollingpolicy.max-file-size", MAX_FILE_SIZE);
                defaults.put("logging.logback.rollingpolicy.max-history", MAX_HISTORY);
                defaults.put("logging.logback.rollingpolicy.total-size-cap", TOTAL_SIZE_CAP);
                defaults.put("logging.threshold.console", "OFF");
            }
            return new Launch(defaults, rest.toArray(String[]::new));
        }
    }

    /** Starts the server and returns; the server's own non-daemon thread keeps the JVM alive. */
    static ConfigurableApplicationContext start(String[] args) {
        Launch launch = Launch.of(args, HostPaths.current());
        Object logFile = launch.defaults().get("logging.file.name");
        if (logFile != null) {
            try {
                Files.createDirectories(Path.of(logFile.toString()).getParent());
            } catch (IOException e) {
                throw new UncheckedIOException("cannot create the log folder of " + logFile, e);
            }
        }
        SpringApplication app = new SpringApplication(TqserveApplication.class);
        app.setDefaultProperties(launch.defaults());
        app.addListeners(new SettingsSourcesLog());
        ConfigurableApplicationContext ctx = app.run(launch.springArgs());
        ctx.getBean(ServingRuntime.class).whenLoaded().whenComplete((loaded, err) -> {
            if (err != null) {
                System.err.println("tqserve: the model could not be loaded, shutting down: "
                        + (err.getCause() != null ? err.getCause().getMessage() : err.getMessage()));
                System.exit(SpringApplication.exit(ctx, () -> 1));
            }
        });
        return ctx;
    }

    /** Logs, once logging is set up, the configuration files the settings were read from (Spring's names). */
    static final class SettingsSourcesLog implements ApplicationListener<ApplicationEnvironmentPreparedEvent> {
        @Override
        public void onApplicationEvent(ApplicationEnvironmentPreparedEvent event) {
            List<String> files = new ArrayList<>();
            for (PropertySource<?> s : event.getEnvironment().getPropertySources()) {
                if (s.getName().startsWith("Config resource")) {
                    files.add(s.getName());
                }
            }
            Object location = event.getEnvironment().getProperty("spring.config.additional-location");
            LoggerFactory.getLogger(ServeCommand.class).info("settings read from (highest first, below environment "
                    + "variables and arguments): {}; config file location: {}", files, location);
        }
    }

    /**
     * The application a benchmark verb starts in its own JVM: quiet (WARN), and logging to stderr like every verb
     * other than serve. Spring Boot's logging system ignores {@code logback.configurationFile} (with a warning on
     * stdout), so the verbs' file is handed to it as {@code logging.config} instead.
     */
    static SpringApplication benchApplication() {
        if (TqserveMain.CLI_LOGGING.equals(System.getProperty("logback.configurationFile"))) {
            System.clearProperty("logback.configurationFile");
        }
        SpringApplication app = new SpringApplication(TqserveApplication.class);
        app.setWebApplicationType(WebApplicationType.REACTIVE);
        app.setDefaultProperties(Map.of("logging.config", "classpath:" + TqserveMain.CLI_LOGGING,
                "logging.level.root", "warn", "logging.level.io.tqserve", "warn"));
        return app;
    }
}
