package io.tqserve.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.config.KvSchemeConverter;
import io.tqserve.config.TqserveApplication;
import io.tqserve.config.TqserveProperties;
import io.tqserve.routing.ServingRuntime;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.convert.ApplicationConversionService;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.core.env.SystemEnvironmentPropertySource;
import org.springframework.util.unit.DataSize;
import org.yaml.snakeyaml.Yaml;
import tools.jackson.databind.json.JsonMapper;

/**
 * Every manifest of deploy/kubernetes against the application: probe paths answer on the port they name, every
 * TQSERVE_* / SPRING_* variable is what Spring's environment mapping finds for a documented setting (Spring itself
 * silently ignores a variable that names none), the memory request covers the heap, weights, KV budgets and prompt caches it is derived from, the
 * grace periods nest, and every metric the autoscaler and the endpoint picker use is exported by a running server
 * (the shipped configuration, started as {@code DefaultConfigServingTest} starts it).
 */
@SpringBootTest(classes = TqserveApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class KubernetesManifestsTest {
    static final Path DIR = Path.of("deploy/kubernetes");
    /** Qwen2.5-0.5B's 494,032,768 parameters at bf16 (ScaleOutCapacityTest derives the count from its shape). */
    static final long QWEN_05B_WEIGHT_BYTES = 2L * 494_032_768;
    static final Pattern METRIC = Pattern.compile("\\btqserve_[a-z_]+");

    @LocalServerPort
    int port;
    @Autowired
    ServingRuntime runtime;
    final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    /** kind/name -> document, over every file kustomization.yaml lists. */
    final Map<String, Map<String, Object>> docs = new HashMap<>();
    Map<String, Object> kustomization;

    @BeforeAll
    @SuppressWarnings("unchecked")
    void load() throws IOException {
        kustomization = new Yaml().load(Files.readString(DIR.resolve("kustomization.yaml")));
        Set<String> listed = new TreeSet<>((List<String>) kustomization.get("resources"));
        Set<String> onDisk = new TreeSet<>();
        try (Stream<Path> files = Files.list(DIR)) {
            files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".yaml")).forEach(onDisk::add);
        }
        onDisk.removeAll(List.of("kustomization.yaml", "epp-config.yaml"));
        assertThat(listed).as("kustomization.yaml lists every manifest").isEqualTo(onDisk);
        for (String file : listed) {
            for (Object o : new Yaml().loadAll(Files.readString(DIR.resolve(file)))) {
                Map<String, Object> doc = (Map<String, Object>) o;
                docs.put(doc.get("kind") + "/" + map(doc, "metadata").get("name"), doc);
            }
        }
    }

    @BeforeEach
    void awaitModel() throws Exception {
        runtime.whenLoaded().get(60, TimeUnit.SECONDS);
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Object node, String... path) {
        Object n = node;
        for (String key : path) {
            n = ((Map<String, Object>) n).get(key);
            assertThat(n).as("field %s", String.join(".", path)).isNotNull();
        }
        return (Map<String, Object>) n;
    }

    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> list(Object node, String... path) {
        String[] parent = java.util.Arrays.copyOf(path, path.length - 1);
        Object n = map(node, parent).get(path[path.length - 1]);
        assertThat(n).as("field %s", String.join(".", path)).isInstanceOf(List.class);
        return (List<Map<String, Object>>) n;
    }

    Map<String, Object> doc(String kindAndName) {
        assertThat(docs).as("manifests").containsKey(kindAndName);
        return docs.get(kindAndName);
    }

    Map<String, Object> container() {
        return list(doc("Deployment/tqserve"), "spec", "template", "spec", "containers").get(0);
    }

    int status(String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
                HttpResponse.BodyHandlers.discarding()).statusCode();
    }

    @Test
    @SuppressWarnings("unchecked")
    void probesAskThePathsAndPortTheServerAnswersOn() throws Exception {
        Map<String, Object> c = container();
        Map<String, Integer> ports = new HashMap<>();
        for (Map<String, Object> p : list(c, "ports")) {
            ports.put((String) p.get("name"), (Integer) p.get("containerPort"));
        }
        Map<String, Object> appYml = new Yaml().load(Files.readString(Path.of("src/main/resources/application.yml")));
        assertThat(ports).containsEntry("http", (Integer) map(appYml, "server").get("port"));
        for (String probe : List.of("startupProbe", "readinessProbe", "livenessProbe")) {
            Map<String, Object> get = map(c, probe, "httpGet");
            assertThat(ports).as(probe + " port").containsKey((String) get.get("port"));
            assertThat(status((String) get.get("path"))).as(probe + " " + get.get("path")).isEqualTo(200);
        }
        assertThat(map(c, "readinessProbe", "httpGet").get("path")).isEqualTo("/actuator/health/readiness");

        Map<String, Object> service = doc("Service/tqserve");
        Map<String, Object> servicePort = list(service, "spec", "ports").get(0);
        assertThat(ports).containsKey((String) servicePort.get("targetPort"));
        Map<String, Object> endpoint = list(doc("ServiceMonitor/tqserve"), "spec", "endpoints").get(0);
        assertThat(endpoint.get("port")).isEqualTo(servicePort.get("name"));
        assertThat(status((String) endpoint.get("path"))).isEqualTo(200);

        Map<String, Object> template = map(doc("Deployment/tqserve"), "spec", "template", "metadata", "labels");
        Map<String, Object> pool = doc("InferencePool/tqserve");
        assertThat(template).containsAllEntriesOf(map(pool, "spec", "selector", "matchLabels"));
        assertThat(template).containsAllEntriesOf(map(service, "spec", "selector"));
        assertThat(list(pool, "spec", "targetPorts").get(0).get("number")).isEqualTo(ports.get("http"));
        Map<String, Object> picker = map(pool, "spec", "endpointPickerRef");
        Map<String, Object> eppService = doc("Service/" + picker.get("name"));
        assertThat(list(eppService, "spec", "ports")).extracting(p -> p.get("port"))
                .contains(map(picker, "port").get("number"));
        Map<String, Object> rule = list(doc("HTTPRoute/tqserve"), "spec", "rules").get(0);
        assertThat(((List<Map<String, Object>>) rule.get("backendRefs")).get(0))
                .containsEntry("kind", "InferencePool").containsEntry("name", "tqserve");
    }

    Map<String, String> containerEnv() {
        Map<String, String> env = new HashMap<>();
        for (Map<String, Object> e : list(container(), "env")) {
            env.put((String) e.get("name"), String.valueOf(e.get("value")));
        }
        return env;
    }

    static Binder binder(Map<String, String> env) {
        var conversion = new ApplicationConversionService();
        conversion.addConverter(new KvSchemeConverter());
        var source = new SystemEnvironmentPropertySource("systemEnvironment", new HashMap<>(env));
        return new Binder(ConfigurationPropertySources.from(source), null, conversion);
    }

    /** Every documented property key of the class path (the configuration processor's and Spring Boot's). */
    static Set<String> knownKeys() throws IOException {
        Set<String> keys = new TreeSet<>();
        var resources = KubernetesManifestsTest.class.getClassLoader()
                .getResources("META-INF/spring-configuration-metadata.json");
        while (resources.hasMoreElements()) {
            try (var in = resources.nextElement().openStream()) {
                JsonMapper.builder().build().readTree(in).path("properties")
                        .forEach(p -> keys.add(p.path("name").asString()));
            }
        }
        return keys;
    }

    @Test
    void everyTqserveVariableBindsToASettingAndTheResourcesCoverWhatTheSettingsAllow() throws IOException {
        Map<String, String> env = containerEnv();
        Set<String> keys = knownKeys();
        assertThat(keys).contains("tqserve.lanes.batched.kv-budget", "spring.lifecycle.timeout-per-shutdown-phase");
        // Spring ignores environment variables that name no setting, so the check is here: each TQSERVE_* and
        // SPRING_* variable must be what Spring's environment mapping finds for some known key.
        List<String> settingVars = env.keySet().stream().filter(k -> k.startsWith("TQSERVE_") || k.startsWith("SPRING_"))
                .sorted().toList();
        assertThat(settingVars).hasSizeGreaterThan(10);
        for (String var : settingVars) {
            var source = ConfigurationPropertySources.from(
                    new SystemEnvironmentPropertySource("systemEnvironment", Map.of(var, env.get(var)))).iterator().next();
            assertThat(keys.stream().filter(k -> source.getConfigurationProperty(ConfigurationPropertyName.of(k)) != null))
                    .as("the setting %s names", var).hasSize(1);
        }
        TqserveProperties p = binder(env).bindOrCreate("tqserve", Bindable.of(TqserveProperties.class));
        assertThat(p.model().path()).isEqualTo(env.get("TQSERVE_MODEL_PATH"));
        assertThat(p.kv().scheme().id()).isEqualTo(env.get("TQSERVE_KV_SCHEME"));
        assertThat(p.store().dir()).isEqualTo(env.get("TQSERVE_STORE_DIR"));
        assertThat(p.backend().threads()).isEqualTo(Integer.parseInt(env.get("TQSERVE_BACKEND_THREADS")));
        Map<String, Object> c = container();
        assertThat(map(c, "resources", "requests").get("cpu")).isEqualTo(Integer.toString(p.backend().threads()));

        // store.dir is a mounted volume.
        assertThat(list(c, "volumeMounts")).extracting(m -> m.get("mountPath")).contains(p.store().dir());
        // Grace periods nest: tqserve's grace < Spring's shutdown phase; preStop + phase < the pod's grace.
        Duration grace = p.api().shutdownGracePeriod();
        Duration phase = binder(env).bind("spring.lifecycle.timeout-per-shutdown-phase", Duration.class).get();
        int preStop = (Integer) map(c, "lifecycle", "preStop", "sleep").get("seconds");
        int terminationGrace = (Integer) map(doc("Deployment/tqserve"), "spec", "template", "spec")
                .get("terminationGracePeriodSeconds");
        assertThat(grace).isLessThan(phase);
        assertThat(Duration.ofSeconds(terminationGrace)).isGreaterThan(phase.plusSeconds(preStop));

        // Memory: heap + weights + KV budgets + in-memory prompt caches (both lanes) fit the request = limit.
        long heap = DataSize.parse(env.get("JAVA_TOOL_OPTIONS").replaceAll(".*-Xmx(\\S+).*", "$1").toUpperCase()
                + "B").toBytes();
        long need = heap + QWEN_05B_WEIGHT_BYTES + p.lanes().turbo().kvBudget().toBytes()
                + p.lanes().batched().kvBudget().toBytes() + 2 * p.promptCache().maxBytes().toBytes();
        long memory = quantity((String) map(c, "resources", "requests").get("memory"));
        assertThat(memory).isGreaterThan(need).isEqualTo(quantity((String) map(c, "resources", "limits").get("memory")));
    }

    /** A Kubernetes memory quantity with a binary suffix. */
    static long quantity(String q) {
        Matcher m = Pattern.compile("(\\d+)(Ki|Mi|Gi)").matcher(q);
        assertThat(m.matches()).as(q).isTrue();
        int shift = switch (m.group(2)) {
            case "Ki" -> 10;
            case "Mi" -> 20;
            default -> 30;
        };
        return Long.parseLong(m.group(1)) << shift;
    }

    @Test
    @SuppressWarnings("unchecked")
    void everyMetricTheAutoscalerAndTheEndpointPickerReadIsExported() throws Exception {
        Set<String> used = new LinkedHashSet<>();
        for (Map<String, Object> t : list(doc("ScaledObject/tqserve"), "spec", "triggers")) {
            Matcher m = METRIC.matcher((String) map(t, "metadata").get("query"));
            while (m.find()) {
                used.add(m.group());
            }
        }
        Map<String, Object> epp = new Yaml().load(Files.readString(DIR.resolve("epp-config.yaml")));
        Map<String, Map<String, Object>> plugins = new HashMap<>();
        for (Map<String, Object> plugin : list(epp, "plugins")) {
            plugins.put((String) plugin.getOrDefault("name", plugin.get("type")), plugin);
        }
        Map<String, Object> extractor = map(plugins.get("core-metrics-extractor"), "parameters");
        Map<String, Object> engine = list(extractor, "engineConfigs").get(0);
        assertThat(engine.get("name")).isEqualTo(extractor.get("defaultEngine"));
        Map<String, Object> podLabels = map(doc("Deployment/tqserve"), "spec", "template", "metadata", "labels");
        assertThat(podLabels).containsEntry((String) extractor.get("engineLabelKey"), engine.get("name"));
        for (String spec : List.of("queuedRequestsSpec", "runningRequestsSpec", "kvUsageSpec")) {
            Matcher m = METRIC.matcher((String) engine.get(spec));
            assertThat(m.find()).as(spec).isTrue();
            used.add(m.group());
        }
        assertThat(used).contains("tqserve_server_requests_waiting", "tqserve_server_kv_usage");

        String path = (String) map(plugins.get("metrics-data-source"), "parameters").get("path");
        String scrape = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        for (String name : used) {
            // A series with exactly this name (a gauge has no _total/_bucket suffix), with or without labels.
            assertThat(Pattern.compile("(?m)^" + name + "[ {]").matcher(scrape).find()).as(name + " exported").isTrue();
        }
        // Every plugin the data layer and the profile name exists.
        List<String> refs = new ArrayList<>();
        for (Map<String, Object> source : list(epp, "dataLayer", "sources")) {
            refs.add((String) source.get("pluginRef"));
            ((List<Map<String, Object>>) source.get("extractors")).forEach(e -> refs.add((String) e.get("pluginRef")));
        }
        list(epp, "schedulingProfiles").forEach(profile -> ((List<Map<String, Object>>) profile.get("plugins"))
                .forEach(r -> refs.add((String) r.get("pluginRef"))));
        assertThat(plugins.keySet()).containsAll(refs);
        // The EPP reads this file from the ConfigMap kustomize generates.
        Map<String, Object> eppPod = map(doc("Deployment/tqserve-epp"), "spec", "template", "spec");
        List<String> args = (List<String>) list(eppPod, "containers").get(0).get("args");
        assertThat(args.get(args.indexOf("--config-file") + 1)).isEqualTo("/config/epp-config.yaml");
        assertThat(list(eppPod, "volumes").get(0)).extracting(v -> ((Map<String, Object>) v.get("configMap")).get("name"))
                .isEqualTo(((List<Map<String, Object>>) kustomization.get("configMapGenerator")).get(0).get("name"));
    }
}
