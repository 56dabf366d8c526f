package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** The exact bytes of the SSE streams: framing, first and last chunks, the usage chunk and [DONE]. */
class SseFormatTest extends ServingTestContext {
    static final Pattern HEAD = Pattern.compile(
            "^data: \\{\"id\":\"((?:chatcmpl|cmpl)-[0-9a-f]{24})\",\"object\":\"([a-z._]+)\",\"created\":(\\d+),"
                    + "\"model\":\"tiny-llama-h128\",\"system_fingerprint\":\"(fp_[0-9a-f]{10})\",");

    /** The events of a body: it must be a sequence of {@code data: ...\n\n} frames and nothing else. */
    static List<String> frames(String body) {
        assertThat(body).endsWith("\n\n");
        List<String> frames = Arrays.asList(body.substring(0, body.length() - 2).split("\n\n", -1));
        for (String f : frames) {
            assertThat(f).startsWith("data: ").doesNotContain("\n");
        }
        return frames;
    }

    @Test
    void chatStreamFramesMatchOpenAiByteForByte() throws Exception {
        Assumptions.assumeTrue(runtime.loaded().orElseThrow().model().chatTemplate() != null,
                "the served model's chat template is not loaded (placeholder ChatTemplate)");
        HttpResponse<String> r = post("/v1/chat/completions", "{\"model\":\"tiny-llama-h128\",\"messages\":[{\"role\":"
                + "\"user\",\"content\":\"What is ls?\"}],\"max_tokens\":5,\"temperature\":0,\"stream\":true,"
                + "\"stream_options\":{\"include_usage\":true},\"tqserve_lane\":\"batched\"}");
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("text/event-stream;charset=UTF-8");
        assertThat(r.headers().firstValue("X-Tqserve-Lane")).hasValue("batched");
        assertThat(r.headers().firstValue("X-Tqserve-Route-Reason")).hasValue("override");
        List<String> frames = frames(r.body());

        Matcher m = HEAD.matcher(frames.get(0));
        assertThat(m.find()).as(frames.get(0)).isTrue();
        String head = "data: {\"id\":\"" + m.group(1) + "\",\"object\":\"chat.completion.chunk\",\"created\":"
                + m.group(3) + ",\"model\":\"tiny-llama-h128\",\"system_fingerprint\":\"" + m.group(4) + "\",";
        assertThat(frames.get(0)).isEqualTo(head + "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
                + "\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}");
        int n = frames.size();
        assertThat(frames.get(n - 1)).isEqualTo("data: [DONE]");
        assertThat(frames.get(n - 2)).isEqualTo(head + "\"choices\":[],\"usage\":{\"prompt_tokens\":"
                + promptTokens() + ",\"completion_tokens\":5,\"total_tokens\":" + (promptTokens() + 5)
                + ",\"prompt_tokens_details\":{\"cached_tokens\":0}}}");
        assertThat(frames.get(n - 3)).isEqualTo(head + "\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,"
                + "\"finish_reason\":\"length\"}]}");
        for (String f : frames.subList(1, n - 3)) {
            assertThat(f).startsWith(head + "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"")
                    .endsWith("\"},\"logprobs\":null,\"finish_reason\":null}]}");
        }
        assertThat(n - 4).as("content chunks").isBetween(1, 5);
    }

    int promptTokens() throws Exception {
        String body = post("/tokenize", "{\"messages\":[{\"role\":\"user\",\"content\":\"What is ls?\"}]}").body();
        return Integer.parseInt(body.replaceAll(".*\"count\":(\\d+).*", "$1"));
    }

    @Test
    void completionStreamFramesMatchOpenAiByteForByte() throws Exception {
        HttpResponse<String> r = post("/v1/completions", "{\"prompt\":\"The ls command\",\"max_tokens\":3,"
                + "\"temperature\":0,\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
        assertThat(r.statusCode()).isEqualTo(200);
        List<String> frames = frames(r.body());
        Matcher m = HEAD.matcher(frames.get(0));
        assertThat(m.find()).as(frames.get(0)).isTrue();
        String head = "data: {\"id\":\"" + m.group(1) + "\",\"object\":\"text_completion\",\"created\":"
                + m.group(3) + ",\"model\":\"tiny-llama-h128\",\"system_fingerprint\":\"" + m.group(4) + "\",";
        assertThat(m.group(1)).startsWith("cmpl-");
        // Greedy text of the embedded model for this prompt: " is used to" (its reference outputs).
        assertThat(frames).containsExactly(
                head + "\"choices\":[{\"text\":\" is\",\"index\":0,\"logprobs\":null,\"finish_reason\":null}]}",
                head + "\"choices\":[{\"text\":\" used\",\"index\":0,\"logprobs\":null,\"finish_reason\":null}]}",
                head + "\"choices\":[{\"text\":\" to\",\"index\":0,\"logprobs\":null,\"finish_reason\":null}]}",
                head + "\"choices\":[{\"text\":\"\",\"index\":0,\"logprobs\":null,\"finish_reason\":\"length\"}]}",
                head + "\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":3,\"total_tokens\":6,"
                        + "\"prompt_tokens_details\":{\"cached_tokens\":0}}}",
                "data: [DONE]");
    }

    @Test
    void streamWithoutIncludeUsageHasNoUsageChunk() throws Exception {
        String body = post("/v1/completions", "{\"prompt\":\"The ls command\",\"max_tokens\":2,\"temperature\":0,"
                + "\"stream\":true}").body();
        List<String> frames = frames(body);
        assertThat(frames).hasSize(4).last().isEqualTo("data: [DONE]");
        assertThat(body).doesNotContain("usage");
    }

    @Test
    void failureAfterTheStreamStartedIsOneErrorEventThenDone() throws Exception {
        batchedLane().setStepHook((request, generated) -> {
            if (request.params().maxTokens() == 13 && generated == 2) {
                throw new IllegalStateException("injected fault");
            }
        });
        HttpResponse<String> r = post("/v1/completions", "{\"prompt\":\"The ls command\",\"max_tokens\":13,"
                + "\"temperature\":0,\"stream\":true}");
        assertThat(r.statusCode()).isEqualTo(200);
        List<String> frames = frames(r.body());
        assertThat(frames).hasSize(4);
        assertThat(frames.get(0)).contains("\"text\":\" is\"");
        assertThat(frames.get(1)).contains("\"text\":\" used\"");
        assertThat(frames.get(2)).isEqualTo("data: {\"error\":{\"message\":\"generation failed: injected fault\","
                + "\"type\":\"server_error\",\"param\":null,\"code\":null}}");
        assertThat(frames.get(3)).isEqualTo("data: [DONE]");
        // The lane goes on serving.
        assertThat(post("/v1/completions", "{\"prompt\":\"The ls command\",\"max_tokens\":2}").statusCode())
                .isEqualTo(200);
    }
}
