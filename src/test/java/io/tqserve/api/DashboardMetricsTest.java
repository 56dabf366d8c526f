package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * deploy/grafana/tqserve.json asks only for series this server exports: every metric name of every PromQL expression
 * of every panel is in a scrape of {@code /actuator/prometheus} after a streamed and a non-streamed request.
 */
class DashboardMetricsTest extends ServingTestContext {
    static final Path DASHBOARD = Path.of("deploy/grafana/tqserve.json");
    /** A PromQL identifier (metric, function, keyword or label name). */
    static final Pattern IDENT = Pattern.compile("(?<![0-9.\\w:])[a-zA-Z_:][a-zA-Z0-9_:]*");
    static final Set<String> KEYWORDS = Set.of("and", "or", "unless", "bool", "offset", "by", "without", "on",
            "ignoring", "group_left", "group_right", "inf", "nan");

    /** The metric names an expression reads: identifiers outside label matchers, ranges and groupings, not calls. */
    static Set<String> metricNames(String expr) {
        String s = expr.replaceAll("\"(?:[^\"\\\\]|\\\\.)*\"", "\"\"").replaceAll("\\{[^}]*}", " ")
                .replaceAll("\\[[^]]*]", " ")
                .replaceAll("\\b(by|without|on|ignoring|group_left|group_right)\\s*\\([^)]*\\)", " ");
        Set<String> names = new TreeSet<>();
        Matcher m = IDENT.matcher(s);
        while (m.find()) {
            String rest = s.substring(m.end()).stripLeading();
            if (!rest.startsWith("(") && !KEYWORDS.contains(m.group().toLowerCase(java.util.Locale.ROOT))) {
                names.add(m.group());
            }
        }
        return names;
    }

    static List<String> expressions(JsonNode panels) {
        List<String> out = new ArrayList<>();
        for (JsonNode p : panels) {
            for (JsonNode t : p.path("targets")) {
                out.add(t.path("expr").asString());
            }
            out.addAll(expressions(p.path("panels")));
        }
        return out;
    }

    @Test
    void everyMetricTheDashboardQueriesIsExported() throws Exception {
        assertThat(post("/v1/completions", "{\"prompt\":\"The ls command\",\"max_tokens\":4,\"temperature\":0,"
                + "\"stream\":true}").statusCode()).isEqualTo(200);
        assertThat(post("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                + "\"max_tokens\":2,\"temperature\":0}").statusCode()).isEqualTo(200);
        String scrape = client.send(HttpRequest.newBuilder(URI.create(baseUrl() + "/actuator/prometheus")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        Set<String> exported = new TreeSet<>();
        for (String line : scrape.split("\n")) {
            Matcher m = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]").matcher(line);
            if (!line.startsWith("#") && m.find()) {
                exported.add(m.group(1));
            }
        }
        assertThat(scrape).contains("http_server_requests_seconds_count{", "uri=\"/v1/completions\"");

        JsonNode dashboard = JsonMapper.shared().readTree(DASHBOARD.toFile());
        List<String> exprs = expressions(dashboard.path("panels"));
        assertThat(exprs).hasSizeGreaterThan(20);
        Set<String> used = new TreeSet<>();
        for (String e : exprs) {
            Set<String> names = metricNames(e);
            assertThat(names).as("metrics of %s", e).isNotEmpty();
            assertThat(exported).as("series of %s", e).containsAll(names);
            used.addAll(names);
        }
        // what the dashboard is for: requests and errors per endpoint, TTFT and inter-token percentiles, tokens/s,
        // lanes and routing, KV bytes per token and usage per lane, prompt-cache hit rate, queue depth, memory
        assertThat(used).contains("http_server_requests_seconds_count", "tqserve_request_ttft_seconds_bucket",
                "tqserve_request_inter_token_seconds_bucket", "tqserve_tokens_generated_total",
                "tqserve_requests_running", "tqserve_routing_decisions_total", "tqserve_kv_bytes_per_token",
                "tqserve_kv_usage", "tqserve_prefix_cache_hits_total", "tqserve_prefix_cache_queries_total",
                "tqserve_requests_waiting", "jvm_memory_used_bytes", "tqserve_device_memory_bytes");
    }

    @Test
    void metricNamesAreTheIdentifiersThatAreNotFunctionsLabelsOrKeywords() {
        assertThat(metricNames("histogram_quantile(0.99, sum by (le, lane) (rate(a_bucket{x=\"y(z)\"}[$__rate_interval])))"))
                .containsExactly("a_bucket");
        assertThat(metricNames("sum by (lane) (rate(h_total[5m])) / sum without (k) (rate(q_total[5m])) > 1e3"))
                .containsExactly("h_total", "q_total");
        assertThat(metricNames("up == 0 and on (instance) b")).containsExactly("b", "up");
    }
}
