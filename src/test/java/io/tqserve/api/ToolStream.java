package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The tool calls of a raw SSE chat stream, read the way the Python openai client accumulates them, with the
 * framing checked as OpenAI sends it: a call's first delta holds index, id, type "function", name and arguments
 * "", the later ones only index and an arguments fragment; indices count from 0 in order.
 *
 * @param calls        per index: {id, name, arguments concatenated}
 * @param fragments    per index: how many chunks carried a non-empty arguments fragment
 * @param content      the content deltas concatenated
 * @param finishReason the last choice's finish_reason
 */
record ToolStream(List<List<String>> calls, List<Integer> fragments, String content, String finishReason) {
    static final JsonMapper JSON = JsonMapper.builder().build();

    static ToolStream of(String body) {
        List<List<String>> calls = new ArrayList<>();
        List<StringBuilder> args = new ArrayList<>();
        List<Integer> fragments = new ArrayList<>();
        StringBuilder content = new StringBuilder();
        String reason = null;
        for (String frame : SseFormatTest.frames(body)) {
            String data = frame.substring("data: ".length());
            if (data.equals("[DONE]")) {
                continue;
            }
            JsonNode chunk = JSON.readTree(data);
            assertThat(chunk.has("error")).as(data).isFalse();
            for (JsonNode choice : chunk.get("choices")) {
                JsonNode delta = choice.get("delta");
                if (delta.get("content") instanceof JsonNode c && c.isString()) {
                    content.append(c.asString());
                }
                if (choice.get("finish_reason") instanceof JsonNode f && f.isString()) {
                    reason = f.asString();
                }
                if (!(delta.get("tool_calls") instanceof JsonNode tcs)) {
                    continue;
                }
                for (JsonNode tc : tcs) {
                    int index = tc.get("index").asInt();
                    JsonNode fn = tc.get("function");
                    if (index == calls.size()) { // a new call: its header
                        assertThat(tc.get("id").asString()).matches("call_[0-9a-f]{24}");
                        assertThat(tc.get("type").asString()).isEqualTo("function");
                        assertThat(fn.get("arguments").asString()).isEmpty();
                        calls.add(new ArrayList<>(List.of(tc.get("id").asString(), fn.get("name").asString())));
                        args.add(new StringBuilder());
                        fragments.add(0);
                    } else {
                        assertThat(index).as("arguments of the call in progress").isEqualTo(calls.size() - 1);
                        assertThat(tc.has("id")).isFalse();
                        assertThat(fn.has("name")).isFalse();
                        String f = fn.get("arguments").asString();
                        args.get(index).append(f);
                        fragments.set(index, fragments.get(index) + (f.isEmpty() ? 0 : 1));
                    }
                }
            }
        }
        for (int i = 0; i < calls.size(); i++) {
            calls.get(i).add(args.get(i).toString());
        }
        return new ToolStream(calls, fragments, content.toString(), reason);
    }
}
