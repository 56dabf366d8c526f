package io.tqserve.cli;

/**
 * Entry point of {@code ./tqserve}: dispatches the verb. No verb (or options only) serves the configured model.
 */
public final class TqserveMain {
    static final String DEFAULT_MODEL = "models/tiny-llama-h128";
    static final String USAGE = """
            usage: tqserve [verb] [options]
              (no verb) | serve [--config FILE] [--service] [--key=value ...]
                                                    serve the model over the OpenAI-compatible API (Spring-style
                                                    overrides; --service logs to rolling files)
              config init [--out FILE] | config check [FILE]   write a starter config file / validate one
              service install|uninstall|status      run the server as a LaunchAgent (macOS) / systemd user unit
              doctor [--config FILE]                check this host, the model and the config; exit 0 when all pass
              generate --prompt TEXT [...]          generate text on the command line
              eval kv-curve [...]                   KV-scheme quality curve (KL vs effective bits)
              quantize --model DIR --bits 4|8 --out DIR [...]  write an MLX-format quantized copy of a model
              bench [decode|codec|load] [...]       benchmarks that print ratios from one run
              test                                  run the test suite (handled by the launcher script)
            """;

    /** Logback configuration of the verbs other than serve: all logging to stderr. */
    static final String CLI_LOGGING = "io/tqserve/cli/logback-cli.xml";

    private TqserveMain() {
    }

    /**
     * Sends every log line of a non-serve verb to stderr: without a configuration Logback logs to stdout at DEBUG,
     * which put the tokenizer library's lines in front of the generated text. Must run before the first logger is
     * created; a {@code -Dlogback.configurationFile} given by the user wins.
     */
    static void cliLogging() {
        if (System.getProperty("logback.configurationFile") == null) {
            System.setProperty("logback.configurationFile", CLI_LOGGING);
        }
    }

    /**
     * The Spring settings of a verb that starts a Spring context: the verbs' Logback file as {@code logging.config}
     * (Spring Boot ignores {@code logback.configurationFile}, with a warning on stdout, so that property is cleared).
     */
    static java.util.Map<String, Object> springCliLogging() {
        if (CLI_LOGGING.equals(System.getProperty("logback.configurationFile"))) {
            System.clearProperty("logback.configurationFile");
        }
        return java.util.Map.of("logging.config", "classpath:" + CLI_LOGGING);
    }

    public static void main(String[] args) {
        String verb = args.length == 0 || args[0].startsWith("--") ? "serve" : args[0];
        if (verb.equals("serve")) {
            try {
                ServeCommand.start(args);
            } catch (IllegalArgumentException e) {
                System.err.println("tqserve: " + e.getMessage());
                System.exit(2);
            } catch (RuntimeException e) {
                // Spring Boot has printed its failure report (naming the setting to change) already.
                System.exit(1);
            }
            return; // the server keeps running on its own threads
        }
        cliLogging();
        int code;
        try {
            code = switch (verb) {
                case "generate" -> GenerateCommand.run(args);
                case "bench" -> BenchCommand.run(args);
                case "eval" -> EvalCommand.run(args);
                case "quantize" -> QuantizeCommand.run(args);
                case "config" -> ConfigCommand.run(args);
                case "service" -> ServiceCommand.run(args);
                case "doctor" -> DoctorCommand.run(args);
                case "help", "-h", "--help" -> {
                    System.out.print(USAGE);
                    yield 0;
                }

                default -> {
                    System.err.println("tqserve: unknown verb '" + verb + "'");
                    System.err.print(USAGE);
                    yield 2;
                }
            };
        } catch (IllegalArgumentException e) {
            System.err.println("tqserve: " + e.getMessage());
            code = 2;
        } catch (IllegalStateException e) {
            // the backend and model checks say what is wrong and how to fix it; the class name adds nothing
            System.err.println("tqserve: " + e.getMessage());
            code = 1;
        } catch (Exception e) {
            System.err.println("tqserve: " + e);
            code = 1;
        }
        System.exit(code);
    }
}
