package io.tqserve.cli;

import io.tqserve.config.TqserveApplication;
import io.tqserve.routing.ServingRuntime;
import java.util.Arrays;
import java.util.Map;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * {@code ./tqserve [serve] [--key=value ...]}: starts the Spring Boot application. Spring-style arguments override
 * any setting ({@code --server.port=9000 --tqserve.kv.scheme=turbo:k4v2}). The HTTP port opens at once (readiness
 * DOWN) while the model loads in the background; if loading fails the server shuts down with exit code 1.
 */
final class ServeCommand {
    private ServeCommand() {
    }

    /** Starts the server and returns; the server's own non-daemon thread keeps the JVM alive. */
    static ConfigurableApplicationContext start(String[] args) {
        String[] springArgs = args.length > 0 && args[0].equals("serve") ? Arrays.copyOfRange(args, 1, args.length)
                : args;
        ConfigurableApplicationContext ctx = SpringApplication.run(TqserveApplication.class, springArgs);
        ctx.getBean(ServingRuntime.class).whenLoaded().whenComplete((loaded, err) -> {
            if (err != null) {
                System.err.println("tqserve: the model could not be loaded, shutting down: "
                        + (err.getCause() != null ? err.getCause().getMessage() : err.getMessage()));
                System.exit(SpringApplication.exit(ctx, () -> 1));
            }
        });
        return ctx;
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
