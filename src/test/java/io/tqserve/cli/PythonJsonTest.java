package io.tqserve.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@link PythonJson} against Python's own output. {@code cli/python-json-dumps.jsonl} holds, per line, an input
 * document and what CPython 3 prints for {@code json.dumps(json.loads(input), indent=None, ensure_ascii=False)}
 * (generated once with python3 and committed; floats in repr's fixed and exponent forms, ints beyond 64 bits,
 * escapes, raw non-ASCII, astral characters, member order).
 */
class PythonJsonTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();

    @Test
    void matchesPythonJsonDumpsByteForByte() throws IOException {
        int cases = 0;
        try (InputStream in = PythonJsonTest.class.getResourceAsStream("/cli/python-json-dumps.jsonl")) {
            for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                if (line.isBlank()) {
                    continue;
                }
                JsonNode c = JSON.readTree(line);
                JsonNode input = JSON.readTree(c.get("input").asString());
                assertThat(PythonJson.dumps(input)).isEqualTo(c.get("expected").asString());
                cases++;
            }
        }
        assertThat(cases).isEqualTo(6);
    }

    @Test
    void floatReprUsesPythonsNotationThresholds() {
        assertThat(PythonJson.floatRepr(1e-5)).isEqualTo("1e-05");
        assertThat(PythonJson.floatRepr(1e-4)).isEqualTo("0.0001");
        assertThat(PythonJson.floatRepr(1e16)).isEqualTo("1e+16");
        assertThat(PythonJson.floatRepr(1e15)).isEqualTo("1000000000000000.0");
        assertThat(PythonJson.floatRepr(-0.0)).isEqualTo("-0.0");
        assertThat(PythonJson.floatRepr(1.5e-300)).isEqualTo("1.5e-300");
        assertThat(PythonJson.floatRepr(Double.POSITIVE_INFINITY)).isEqualTo("Infinity");
    }
}
