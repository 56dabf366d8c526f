package io.tqserve.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * One source for each setting's default: the {@code @ConfigurationProperties} records. The configuration processor
 * turns them into {@code META-INF/spring-configuration-metadata.json}; this test holds the settings tables of
 * docs/configuration.md and README.md to exactly its {@code tqserve.*} keys and defaults, and application.yml to
 * restating none of them.
 *
 * <p>A table row that documents a setting reads {@code | `tqserve.key` | `default` ...| meaning |}: the key alone,
 * in backticks, in the first cell; the default in backticks at the start of the second cell (anything may follow it
 * in that cell), written as the metadata has it — {@code 10s}, {@code 256MB}, {@code auto}, {@code true},
 * {@code ""} for an empty string, {@code []} for an empty list, {@code a,b} for a list, {@code none} where the
 * record gives no default.
 */
class ConfigurationDocsTest {
    /** A settings row: key cell, then the first backticked value of the default cell. */
    static final Pattern ROW = Pattern.compile("^\\|\\s*`(tqserve\\.[a-z0-9.\\-]+)`\\s*\\|\\s*`([^`]*)`");
    /** Any table row whose first cell starts with a tqserve key (to catch rows the pattern above cannot read). */
    static final Pattern ANY_ROW = Pattern.compile("^\\|\\s*`tqserve\\.");

    /** Every tqserve.* property of the generated metadata and its default, as the docs write it. */
    static Map<String, String> metadata() throws IOException {
        Map<String, String> keys = new TreeMap<>();
        for (URL url : Collections.list(ConfigurationDocsTest.class.getClassLoader()
                .getResources("META-INF/spring-configuration-metadata.json"))) {
            JsonNode root;
            try (InputStream in = url.openStream()) {
                root = JsonMapper.shared().readTree(in);
            }
            for (JsonNode p : root.path("properties")) {
                String name = p.path("name").asString();
                if (name.startsWith("tqserve.")) {
                    keys.put(name, render(p.path("type").asString(), p.get("defaultValue")));
                }
            }
        }
        return keys;
    }

    static String render(String type, JsonNode value) {
        if (value == null || value.isNull()) {
            return type.startsWith("java.util.List") || type.startsWith("java.util.Set") ? "[]" : "none";
        }
        if (value.isArray()) {
            List<String> items = new ArrayList<>();
            value.forEach(v -> items.add(v.asString()));
            return items.isEmpty() ? "[]" : String.join(",", items);
        }
        String s = value.asString();
        return s.isEmpty() ? "\"\"" : s;
    }

    /** The documented rows of a Markdown file: key → default; rows it cannot read and duplicates go to errors. */
    static Map<String, String> documented(Path file, List<String> errors) throws IOException {
        Map<String, String> rows = new TreeMap<>();
        for (String line : Files.readAllLines(file)) {
            Matcher m = ROW.matcher(line);
            if (m.find()) {
                if (rows.put(m.group(1), m.group(2)) != null) {
                    errors.add(file + ": `" + m.group(1) + "` has more than one row");
                }
            } else if (ANY_ROW.matcher(line).find()) {
                errors.add(file + ": row not in the form | `tqserve.key` | `default` | meaning |: " + line);
            }
        }
        return rows;
    }

    /** What must change in {@code file} for its rows to match the metadata, one line per key. */
    static List<String> compare(Path file, Map<String, String> expected) throws IOException {
        List<String> errors = new ArrayList<>();
        Map<String, String> rows = documented(file, errors);
        expected.forEach((key, def) -> {
            String doc = rows.get(key);
            if (doc == null) {
                errors.add(file + ": missing row | `" + key + "` | `" + def + "` | ... |");
            } else if (!doc.equals(def)) {
                errors.add(file + ": `" + key + "` documents default `" + doc + "`, the record's default is `" + def
                        + "`");
            }
        });
        rows.keySet().stream().filter(k -> !expected.containsKey(k)).forEach(k -> errors.add(file + ": `" + k
                + "` is documented but is not a property of TqserveProperties (renamed or removed?)"));
        return errors;
    }

    @Test
    void metadataIsGeneratedFromTheRecords() throws IOException {
        Map<String, String> keys = metadata();
        assertTrue(keys.size() > 30, "configuration metadata not generated (spring-boot-configuration-processor): "
                + keys.keySet());
        assertEquals("auto", keys.get("tqserve.backend.type"));
        assertEquals("256MB", keys.get("tqserve.lanes.turbo.kv-budget"));
    }

    @Test
    void configurationDocAndReadmeListExactlyTheSettingsAndTheirDefaults() throws IOException {
        Map<String, String> keys = metadata();
        List<String> errors = new ArrayList<>();
        errors.addAll(compare(Path.of("docs/configuration.md"), keys));
        errors.addAll(compare(Path.of("README.md"), keys));
        if (!errors.isEmpty()) {
            fail(errors.size() + " difference(s) between the docs and the @ConfigurationProperties records "
                    + "(row format: | `tqserve.key` | `default` | meaning |):\n" + String.join("\n", errors));
        }
    }

    @Test
    void applicationYmlRestatesNoTqserveDefault() throws IOException {
        List<String> lines = Files.readAllLines(Path.of("src/main/resources/application.yml"));
        List<String> restated = lines.stream().filter(l -> l.startsWith("tqserve:")).toList();
        assertTrue(restated.isEmpty(), "application.yml must not restate tqserve.* defaults (they live in "
                + "TqserveProperties): remove its tqserve: section");
    }
}
