package io.tqserve.toolcall;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The streamed split on outputs the goldens do not cover: markup inside argument strings, several calls per format,
 * parallel_tool_calls false, arguments written as a string or before the name, and output cut short.
 */
class ChatOutputParserTest {
    static final ChatFormat.Reasoning THINK = new ChatFormat.Reasoning("<think>", "</think>", -1);

    static ToolCallGoldenTest.Result run(ToolCallFormat f, boolean bare, boolean parallel, String output, int piece) {
        return ToolCallGoldenTest.parse(new ChatOutputParser(f, null, false, bare, parallel), output, piece);
    }

    @Test
    void markupInsideAnArgumentStringDoesNotEndTheCall() {
        String args = "{\"text\": \"a </tool_call> b <tool_call> c\"}";
        String out = "<tool_call>\n{\"name\": \"echo\", \"arguments\": " + args + "}\n</tool_call>";
        for (boolean bare : new boolean[] {true, false}) {
            for (int piece : new int[] {1, 2, 5, out.length()}) {
                var r = run(ToolCallFormat.HERMES, bare, true, out, piece);
                assertThat(r.content()).isEmpty();
                assertThat(r.calls()).hasSize(1);
                assertThat(r.calls().getFirst().name()).isEqualTo("echo");
                assertThat(r.calls().getFirst().arguments()).isEqualTo(args);
                assertThat(r.streamedArguments()).containsExactly(args);
            }
        }
        // a tool whose name is markup
        String named = "<tool_call>\n{\"name\": \"</tool_call>\", \"arguments\": {}}\n</tool_call>";
        var r = run(ToolCallFormat.HERMES, true, true, named, 1);
        assertThat(r.calls()).extracting(ToolCall::name).containsExactly("</tool_call>");
        assertThat(r.content()).isEmpty();
    }

    @Test
    void severalCallsComeBackAsIndexedCallsInEveryFormat() {
        String a = "{\"city\": \"Paris\"}";
        String b = "{\"city\": \"Oslo; [x], {y}\"}";
        String hermes = "<tool_call>\n{\"name\": \"w\", \"arguments\": " + a + "}\n</tool_call>\n<tool_call>\n"
                + "{\"name\": \"t\", \"arguments\": " + b + "}\n</tool_call>";
        String llama = "{\"name\": \"w\", \"parameters\": " + a + "}; {\"name\": \"t\", \"parameters\": " + b + "}";
        String mistral = "[TOOL_CALLS][{\"name\": \"w\", \"arguments\": " + a + "}, {\"name\": \"t\", \"arguments\": "
                + b + "}]";
        for (var c : List.of(List.of(ToolCallFormat.HERMES, hermes), List.of(ToolCallFormat.LLAMA3_JSON, llama),
                List.of(ToolCallFormat.LLAMA3_JSON, "<|python_tag|>" + llama), List.of(ToolCallFormat.MISTRAL,
                        mistral), List.of(ToolCallFormat.MISTRAL, "Let me check. " + mistral))) {
            ToolCallFormat f = (ToolCallFormat) c.get(0);
            String out = (String) c.get(1);
            for (int piece : new int[] {1, 4, out.length()}) {
                var r = run(f, false, true, out, piece);
                assertThat(r.calls()).as(f + " " + out).extracting(ToolCall::name).containsExactly("w", "t");
                assertThat(r.calls()).extracting(ToolCall::arguments).containsExactly(a, b);
                assertThat(r.streamedArguments()).containsExactly(a, b);
                assertThat(r.content()).isEqualTo(out.startsWith("Let") ? "Let me check." : "");
            }
        }
        // the forced (bare) forms the grammar writes
        var r = run(ToolCallFormat.MISTRAL, true, true, "[{\"name\": \"w\", \"arguments\": " + a + "}, "
                + "{\"name\": \"t\", \"arguments\": " + b + "}]", 3);
        assertThat(r.calls()).extracting(ToolCall::name).containsExactly("w", "t");
    }

    @Test
    void withoutParallelCallsOnlyTheFirstCallIsReturned() {
        String out = "{\"name\": \"w\", \"parameters\": {}}; {\"name\": \"t\", \"parameters\": {}}";
        var r = run(ToolCallFormat.LLAMA3_JSON, true, false, out, 2);
        assertThat(r.calls()).extracting(ToolCall::name).containsExactly("w");
        assertThat(r.content()).isEmpty();
    }

    @Test
    void argumentsAsAStringOrBeforeTheNameOrMissing() {
        var s = run(ToolCallFormat.HERMES, false, true,
                "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}\n</tool_call>", 1);
        assertThat(s.calls()).extracting(ToolCall::arguments).containsExactly("{\"a\":1}");
        var before = run(ToolCallFormat.LLAMA3_JSON, false, true, "{\"parameters\": {\"a\": 1}, \"name\": \"f\"}", 1);
        assertThat(before.calls()).extracting(ToolCall::name).containsExactly("f");
        assertThat(before.streamedArguments()).containsExactly("{\"a\":1}");
        var none = run(ToolCallFormat.HERMES, false, true, "<tool_call>\n{\"name\": \"f\"}\n</tool_call>", 1);
        assertThat(none.calls()).extracting(ToolCall::arguments).containsExactly("{}");
        assertThat(none.streamedArguments()).containsExactly("{}");
    }

    @Test
    void textThatIsNotACallStaysContent() {
        var json = run(ToolCallFormat.LLAMA3_JSON, false, true, "{\"answer\": 42}", 1);
        assertThat(json.calls()).isEmpty();
        assertThat(json.content()).isEqualTo("{\"answer\": 42}");
        var broken = run(ToolCallFormat.HERMES, false, true, "Hi <tool_call>\nnot json\n</tool_call>", 3);
        assertThat(broken.calls()).isEmpty();
        assertThat(broken.content()).isEqualTo("Hi <tool_call>\nnot json\n</tool_call>");
    }

    @Test
    void aCallCutShortKeepsWhatArrived() {
        var r = run(ToolCallFormat.HERMES, true, true, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"x", 2);
        assertThat(r.calls()).extracting(ToolCall::arguments).containsExactly("{\"a\": \"x");
        assertThat(r.content()).isEmpty();
    }

    @Test
    void reasoningThenCall() {
        String out = "<think>\nuse w\n</think>\n\n<tool_call>\n{\"name\": \"w\", \"arguments\": {}}\n</tool_call>";
        var r = ToolCallGoldenTest.parse(new ChatOutputParser(ToolCallFormat.HERMES, THINK, false, false, true), out,
                2);
        assertThat(r.reasoning().strip()).isEqualTo("use w");
        assertThat(r.calls()).extracting(ToolCall::name).containsExactly("w");
        assertThat(r.content()).isEmpty();
    }
}
