package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.config.TqserveApplication;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * The embedded model served with a chat template that has no tool-call format (the plain ChatML it shipped with
 * before): a request with tools is a 400 saying the template cannot render them; without tools it works.
 */
@SpringBootTest(classes = TqserveApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"tqserve.lanes.turbo.enabled=false"})
class ToolsUnsupportedTemplateTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String PLAIN_CHATML = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' "
            + "+ message['content'] + '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}"
            + "{{ '<|im_start|>assistant\\n' }}{% endif %}";
    static Path dir;

    @LocalServerPort
    int port;
    @Autowired
    io.tqserve.routing.ServingRuntime runtime;

    @DynamicPropertySource
    static void model(DynamicPropertyRegistry registry) throws Exception {
        dir = Files.createTempDirectory("tqserve-no-tools");
        Path src = Path.of("models/tiny-llama-h128").toAbsolutePath();
        try (var files = Files.list(src)) {
            for (Path f : files.toList()) {
                Path to = dir.resolve(f.getFileName());
                if (f.getFileName().toString().equals("tokenizer_config.json")) {
                    ObjectNode cfg = (ObjectNode) JSON.readTree(f.toFile());
                    cfg.put("chat_template", PLAIN_CHATML);
                    Files.writeString(to, cfg.toString());
                } else {
                    Files.createSymbolicLink(to, f);
                }
            }
        }
        registry.add("tqserve.model.path", dir::toString);
    }

    @AfterAll
    static void cleanUp() throws Exception {
        try (var files = Files.list(dir)) {
            for (Path f : files.toList()) {
                Files.delete(f);
            }
        }
        Files.delete(dir);
    }

    HttpResponse<String> chat(String extra) throws Exception {
        runtime.whenLoaded().get(60, TimeUnit.SECONDS);
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://localhost:" + port
                + "/v1/chat/completions")).header("Content-Type", "application/json").timeout(Duration.ofSeconds(60))
                .POST(HttpRequest.BodyPublishers.ofString(ToolsSdkTest.chatBody(extra))).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void toolsForATemplateThatCannotRenderThemAreA400() throws Exception {
        HttpResponse<String> r = chat(",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
                + "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}}}]");
        assertThat(r.statusCode()).isEqualTo(400);
        JsonNode e = JSON.readTree(r.body()).get("error");
        assertThat(e.get("param").asString()).isEqualTo("tools");
        assertThat(e.get("message").asString()).contains("cannot render tools");
        assertThat(chat("").statusCode()).isEqualTo(200);
    }
}
