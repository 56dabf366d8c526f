package io.tqserve.config;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.context.properties.ConfigurationPropertiesBinding;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.bind.UnboundConfigurationPropertiesException;
import org.springframework.boot.context.properties.bind.validation.BindValidationException;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.env.OriginTrackedMapPropertySource;
import org.springframework.boot.env.YamlPropertySourceLoader;
import org.springframework.boot.origin.Origin;
import org.springframework.boot.origin.OriginTrackedValue;
import org.springframework.boot.origin.TextResourceOrigin;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import org.springframework.core.env.PropertySource;
import org.springframework.core.io.FileSystemResource;
import org.springframework.validation.FieldError;
import org.springframework.validation.ObjectError;

/**
 * {@code tqserve config check FILE}: validates a config file without starting the server, with the server's own
 * rules — the file is bound by Spring Boot to {@link TqserveProperties} (unknown keys, types, ranges, the KV scheme
 * converter), then {@link StartupValidator#validate} (model folder, head dim against the KV scheme, lanes, backend,
 * MLX device memory) and the memory check the server logs at startup ({@link KvMemoryCheck}) run on it. Each problem
 * names the line of the file that sets the key to change, from the positions Spring Boot's YAML loader records
 * (SnakeYAML marks). Binding problems are all reported (the key is set aside and the file bound again); the checks
 * after binding stop at the first.
 *
 * <p>The file is checked on top of the packaged defaults only: environment variables and arguments, which the
 * server would lay over it, are left out.
 */
public final class ConfigCheck {
    /** Keys a message names. */
    private static final Pattern KEY = Pattern.compile("(?:tqserve|server|spring|logging)\\.[a-z0-9.\\-]*[a-z0-9]");
    /** Most binding problems reported from one file. */
    private static final int MAX_PROBLEMS = 32;

    /**
     * One problem.
     *
     * @param key     the key to change, or "" when the message names none
     * @param line    its line in the file (1-based), 0 when the file does not set it
     * @param message what is wrong and what to do
     */
    public record Problem(String key, int line, String message) {
        /** {@code FILE:LINE: key: message}, or {@code FILE: message} without a line. */
        public String render(Path file) {
            String where = line > 0 ? file + ":" + line : file.toString();
            String what = key.isEmpty() ? message
                    : line > 0 ? key + ": " + message : key + " (not set in this file; add it): " + message;
            return where + ": " + what;
        }
    }

    private ConfigCheck() {
    }

    /**
     * What a file gives the server.
     *
     * @param settings   the binding problems (unknown keys, types, ranges), in the order of the file
     * @param serving    the first problem of the startup checks ({@link StartupValidator}), if any
     * @param memory     weights + KV budgets against this host's memory ({@link KvMemoryCheck}), if they do not fit
     * @param properties the settings as bound (the keys with binding problems left out)
     * @param address    {@code server.address}, or null (every interface)
     * @param port       {@code server.port}
     * @param plan       the validated plan, or null when a startup check failed
     */
    public record Inspection(List<Problem> settings, Optional<Problem> serving, Optional<Problem> memory,
            TqserveProperties properties, String address, int port, StartupValidator.Plan plan) {
        /** Every problem, in the order of the file, those without a line last. */
        public List<Problem> problems() {
            List<Problem> all = new ArrayList<>(settings);
            serving.ifPresent(all::add);
            memory.ifPresent(all::add);
            return byLine(all);
        }
    }

    /** The problems of the file; empty when the server would start from it. */
    public static List<Problem> check(Path file) {
        return check(file, Map.of());
    }

    /**
     * As {@link #check(Path)}, with extra Spring settings for the checking context (below the file's): a
     * command-line verb passes its {@code logging.config}.
     */
    public static List<Problem> check(Path file, Map<String, Object> contextDefaults) {
        Map<String, Object> values = new LinkedHashMap<>();
        Optional<Problem> unreadable = read(file, values);
        return unreadable.isPresent() ? List.of(unreadable.get()) : inspect(values, contextDefaults).problems();
    }

    /**
     * Binds and checks the file (null: the packaged defaults alone); empty when it is not a readable YAML file,
     * whose problem {@link #check} reports.
     */
    public static Optional<Inspection> inspect(Path file, Map<String, Object> contextDefaults) {
        Map<String, Object> values = new LinkedHashMap<>();
        if (file != null && read(file, values).isPresent()) {
            return Optional.empty();
        }
        return Optional.of(inspect(values, contextDefaults));
    }

    private static Optional<Problem> read(Path file, Map<String, Object> values) {
        try {
            for (PropertySource<?> s : new YamlPropertySourceLoader().load(file.toString(),
                    new FileSystemResource(file))) {
                if (s.getSource() instanceof Map<?, ?> m) {
                    m.forEach((k, v) -> values.put(k.toString(), v));
                }
            }
            return Optional.empty();
        } catch (IOException | RuntimeException e) {
            return Optional.of(new Problem("", yamlLine(e), "not a readable YAML file: " + rootMessage(e)));
        }
    }

    private static Inspection inspect(Map<String, Object> values, Map<String, Object> contextDefaults) {
        List<Problem> problems = new ArrayList<>(unknownOutsideTqserve(values));
        Bound bound = null;
        for (int round = 0; round < MAX_PROBLEMS && bound == null; round++) {
            Either result = bind(values, contextDefaults);
            if (result.bound() != null) {
                bound = result.bound();
                break;
            }
            List<Problem> found = explain(result.failure(), values);
            problems.addAll(found);
            boolean removed = false;
            for (Problem p : found) {
                removed |= p.line() > 0 && remove(values, p.key());
            }
            if (!removed) {
                break;
            }
        }
        if (bound == null) { // a binding problem the file cannot fix by leaving a key out: the defaults then
            Either defaults = bind(Map.of(), contextDefaults);
            if (defaults.bound() == null) {
                throw new IllegalStateException("the packaged defaults do not bind", defaults.failure());
            }
            return new Inspection(byLine(problems), Optional.empty(), Optional.empty(), defaults.bound().properties(),
                    defaults.bound().address(), defaults.bound().port(), null);
        }
        StartupValidator.Plan plan = null;
        Optional<Problem> serving = Optional.empty();
        Optional<Problem> memory = Optional.empty();
        try {
            plan = StartupValidator.validate(bound.properties());
            memory = ServingConfiguration.memoryWarning(bound.properties(), plan).map(m -> named(m, values));
        } catch (RuntimeException e) {
            serving = Optional.of(named(e.getMessage() != null ? e.getMessage() : e.toString(), values));
            plan = null;
        }
        return new Inspection(byLine(problems), serving, memory, bound.properties(), bound.address(), bound.port(),
                plan);
    }

    /**
     * Keys outside {@code tqserve.} that no setting of the class path has (Spring Boot's configuration metadata):
     * the server would ignore them silently (Spring Boot checks unknown keys only under a prefix that asks for it,
     * as {@code tqserve.} does), so a misspelt {@code sever.port} or {@code server.adress} is reported here. A key
     * is known when it names a property, an element of a list property, or an entry of a map property
     * ({@code logging.level.<logger>}).
     */
    static List<Problem> unknownOutsideTqserve(Map<String, Object> values) {
        Metadata metadata = Metadata.classpath();
        List<Problem> out = new ArrayList<>();
        for (String key : values.keySet()) {
            ConfigurationPropertyName name = ConfigurationPropertyName.adapt(key, '.');
            if (name.isEmpty() || name.getElement(0, ConfigurationPropertyName.Form.UNIFORM).equals("tqserve")
                    || metadata.knows(name)) {
                continue;
            }
            out.add(new Problem(name.toString(), line(values, key), "no setting has this name, so the server would "
                    + "ignore it (a misspelt key? docs/configuration.md lists tqserve's settings and the Spring Boot "
                    + "ones it sets)"));
        }
        return out;
    }

    /** The property names of the class path's Spring Boot configuration metadata, and which of them are maps. */
    record Metadata(Set<ConfigurationPropertyName> properties, Set<ConfigurationPropertyName> maps) {
        private static volatile Metadata classpath;

        static Metadata classpath() {
            Metadata m = classpath;
            if (m == null) {
                m = load(ConfigCheck.class.getClassLoader());
                classpath = m;
            }
            return m;
        }

        static Metadata load(ClassLoader loader) {
            Set<ConfigurationPropertyName> properties = new java.util.HashSet<>();
            Set<ConfigurationPropertyName> maps = new java.util.HashSet<>();
            for (String file : List.of("META-INF/spring-configuration-metadata.json",
                    "META-INF/additional-spring-configuration-metadata.json")) {
                try {
                    for (java.net.URL url : java.util.Collections.list(loader.getResources(file))) {
                        tools.jackson.databind.JsonNode root;
                        try (java.io.InputStream in = url.openStream()) {
                            root = tools.jackson.databind.json.JsonMapper.shared().readTree(in);
                        }
                        for (tools.jackson.databind.JsonNode p : root.path("properties")) {
                            ConfigurationPropertyName n = ConfigurationPropertyName.adapt(p.path("name").asString(),
                                    '.');
                            properties.add(n);
                            if (p.path("type").asString().startsWith("java.util.Map")) {
                                maps.add(n);
                            }
                        }
                    }
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException("cannot read " + file, e);
                }
            }
            return new Metadata(Set.copyOf(properties), Set.copyOf(maps));
        }

        boolean knows(ConfigurationPropertyName name) {
            for (ConfigurationPropertyName n = name; !n.isEmpty(); n = n.getParent()) {
                if (n == name ? properties.contains(n) : maps.contains(n) || indexedTail(name, n)
                        && properties.contains(n)) {
                    return true;
                }
            }
            return false;
        }

        /** Whether every element of {@code name} after {@code prefix} is a list index ({@code a.b[0]}). */
        private static boolean indexedTail(ConfigurationPropertyName name, ConfigurationPropertyName prefix) {
            for (int i = prefix.getNumberOfElements(); i < name.getNumberOfElements(); i++) {
                if (!name.isNumericIndex(i)) {
                    return false;
                }
            }
            return true;
        }
    }

    /** The settings as the server binds them, and where it listens. */
    record Bound(TqserveProperties properties, String address, int port) {
    }

    private record Either(Bound bound, RuntimeException failure) {
    }

    /** In the order of the file, problems without a line last. */
    private static List<Problem> byLine(List<Problem> problems) {
        List<Problem> sorted = new ArrayList<>(problems);
        sorted.sort(java.util.Comparator.comparingInt(p -> p.line() == 0 ? Integer.MAX_VALUE : p.line()));
        return List.copyOf(sorted);
    }

    /** The first throwable of the type in the cause chain, or null. */
    private static <T extends Throwable> T cause(Throwable t, Class<T> type) {
        Throwable c = t;
        for (int i = 0; i < 32 && c != null; i++, c = c.getCause()) {
            if (type.isInstance(c)) {
                return type.cast(c);
            }
        }
        return null;
    }

    /** Starts the binding context on the file's values: the bound settings, or the failure. */
    private static Either bind(Map<String, Object> values, Map<String, Object> contextDefaults) {
        SpringApplication app = new SpringApplication(Checks.class);
        app.setWebApplicationType(WebApplicationType.NONE);
        app.setRegisterShutdownHook(false);
        Map<String, Object> defaults = new LinkedHashMap<>(contextDefaults);
        defaults.putAll(Map.of("spring.config.location", "optional:classpath:/", "spring.main.banner-mode", "off",
                "logging.level.root", "off"));
        app.setDefaultProperties(defaults);
        app.addInitializers(ctx -> {
            ctx.getEnvironment().getPropertySources().remove("systemEnvironment");
            ctx.getEnvironment().getPropertySources().addFirst(
                    new OriginTrackedMapPropertySource("config file", new LinkedHashMap<>(values)));
        });
        try (ConfigurableApplicationContext ctx = app.run()) {
            return new Either(ctx.getBean(Bound.class), null);
        } catch (RuntimeException e) {
            return new Either(null, e);
        }
    }

    /** The problems one failure stands for, each with the key and line to change. */
    private static List<Problem> explain(RuntimeException failure, Map<String, Object> values) {
        List<Problem> out = new ArrayList<>();
        if (cause(failure, UnboundConfigurationPropertiesException.class) instanceof UnboundConfigurationPropertiesException u) {
            for (ConfigurationProperty p : u.getUnboundProperties()) {
                String key = p.getName().toString();
                out.add(new Problem(key, line(values, key), "unknown key (docs/configuration.md lists every key; "
                        + "the server refuses a key it does not know rather than ignore a misspelt one)"));
            }
            return out;
        }
        if (cause(failure, BindValidationException.class) instanceof BindValidationException v) {
            for (ObjectError e : v.getValidationErrors()) {
                String key = v.getValidationErrors().getName() + (e instanceof FieldError f
                        ? "." + kebab(f.getField()) : "");
                Object rejected = e instanceof FieldError f ? f.getRejectedValue() : null;
                out.add(new Problem(key, line(values, key), "value " + rejected + " " + e.getDefaultMessage()));
            }
            return out;
        }
        if (cause(failure, StartupValidationException.class) instanceof StartupValidationException s) {
            return List.of(named(s.getMessage(), values));
        }
        if (cause(failure, BindException.class) instanceof BindException b) {
            String reason = rootMessage(b);
            if (b.getProperty() != null) {
                String key = b.getProperty().getName().toString();
                return List.of(new Problem(key, line(values, key), "value " + b.getProperty().getValue()
                        + " cannot be used: " + reason));
            }
            Problem p = named(reason, values);
            return List.of(p.key().isEmpty() ? new Problem(b.getName().toString(),
                    line(values, b.getName().toString()), reason) : p);
        }
        return List.of(new Problem("", 0, rootMessage(failure)));
    }

    /** A problem whose message names settings: the first one the file sets gives the line. */
    private static Problem named(String message, Map<String, Object> values) {
        Set<String> keys = new LinkedHashSet<>();
        Matcher m = KEY.matcher(message);
        while (m.find()) {
            keys.add(m.group());
        }
        for (String k : keys) {
            int line = line(values, k);
            if (line > 0) {
                return new Problem(k, line, message);
            }
        }
        return new Problem(keys.isEmpty() ? "" : keys.iterator().next(), 0, message);
    }

    /** The line (1-based) of the file that sets the key or an element of it; 0 when none does. */
    static int line(Map<String, Object> values, String key) {
        ConfigurationPropertyName name = ConfigurationPropertyName.adapt(key, '.');
        for (Map.Entry<String, Object> e : values.entrySet()) {
            ConfigurationPropertyName set = ConfigurationPropertyName.adapt(e.getKey(), '.');
            if ((set.equals(name) || name.isAncestorOf(set)) && e.getValue() instanceof OriginTrackedValue v) {
                for (Origin o = v.getOrigin(); o != null; o = o.getParent()) {
                    if (o instanceof TextResourceOrigin t && t.getLocation() != null) {
                        return t.getLocation().getLine() + 1;
                    }
                }
            }
        }
        return 0;
    }

    private static boolean remove(Map<String, Object> values, String key) {
        ConfigurationPropertyName name = ConfigurationPropertyName.adapt(key, '.');
        return values.keySet().removeIf(k -> {
            ConfigurationPropertyName set = ConfigurationPropertyName.adapt(k, '.');
            return set.equals(name) || name.isAncestorOf(set);
        });
    }

    private static String kebab(String field) {
        return field.replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(Locale.ROOT);
    }

    private static int yamlLine(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (c instanceof org.yaml.snakeyaml.error.MarkedYAMLException y && y.getProblemMark() != null) {
                return y.getProblemMark().getLine() + 1;
            }
        }
        return 0;
    }

    private static String rootMessage(Throwable t) {
        Throwable c = t;
        for (int i = 0; i < 16 && c.getCause() != null; i++) {
            c = c.getCause();
        }
        return c.getMessage() != null ? c.getMessage() : c.toString();
    }

    /**
     * The checking context: the server's binding of the settings, its startup checks, and the port. Not a
     * {@code @Configuration}, so the server's component scan of this package leaves it out (a lite configuration
     * class: Spring processes its bean methods when it is the application's source).
     */
    @EnableConfigurationProperties(TqserveProperties.class)
    static class Checks {
        @Bean
        @ConfigurationPropertiesBinding
        static KvSchemeConverter kvSchemeConverter() {
            return new KvSchemeConverter();
        }

        @Bean
        Bound bound(TqserveProperties props, Environment env) {
            Binder binder = Binder.get(env);
            int port = binder.bind("server.port", Integer.class).orElse(8080);
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("server.port=" + port + " is not a port (0 to 65535)");
            }
            return new Bound(props, binder.bind("server.address", String.class).orElse(null), port);
        }
    }
}
