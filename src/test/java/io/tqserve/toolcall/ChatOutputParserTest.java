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

    /** Mistral's tokenizer v11 layout ([TOOL_CALLS]name[ARGS]{...} per call), as its templates render calls. */
    @Test
    void mistralNameArgsCallsStreamAsIndexedCalls() {
        String a = "{\"city\": \"Paris [ARGS] {x}\"}";
        String b = "{\"zone\": \"CET\", \"n\": [1, {\"k\": \"}\"}]}";
        String out = "[TOOL_CALLS]get_weather[ARGS]" + a + "[TOOL_CALLS]get_time[ARGS]" + b;
        for (String prefix : new String[] {"", "Let me check. "}) {
            for (int piece : new int[] {1, 3, 7, (prefix + out).length()}) {
                var r = run(ToolCallFormat.MISTRAL_ARGS, false, true, prefix + out, piece);
                assertThat(r.calls()).as(piece + " " + prefix).extracting(ToolCall::name)
                        .containsExactly("get_weather", "get_time");
                assertThat(r.calls()).extracting(ToolCall::arguments).containsExactly(a, b);
                assertThat(r.streamedNames()).containsExactly("get_weather", "get_time");
                assertThat(r.streamedArguments()).containsExactly(a, b);
                assertThat(r.content()).isEqualTo(prefix.strip());
                if (piece == 1) {
                    assertThat(r.fragments().getFirst()).isEqualTo(a.length()); // one fragment per character fed
                }
            }
        }
        // forced (bare): the same; without parallel calls only the first
        var forced = run(ToolCallFormat.MISTRAL_ARGS, true, false, out, 2);
        assertThat(forced.calls()).extracting(ToolCall::name).containsExactly("get_weather");
        assertThat(forced.content()).isEmpty();
        // no arguments marker after a name: content, markup and all
        var broken = run(ToolCallFormat.MISTRAL_ARGS, false, true, "[TOOL_CALLS]not a call", 2);
        assertThat(broken.calls()).isEmpty();
        assertThat(broken.content()).isEqualTo("[TOOL_CALLS]not a call");
        // cut short inside the arguments: the call with what arrived
        var cut = run(ToolCallFormat.MISTRAL_ARGS, false, true, "[TOOL_CALLS]f[ARGS]{\"a\": \"x", 3);
        assertThat(cut.calls()).extracting(ToolCall::arguments).containsExactly("{\"a\": \"x");
    }

    @Test
    void theTemplateChoosesTheMistralEntry() {
        String v11 = "{%- for tool in message.tool_calls %}{{- '[TOOL_CALLS]' + tool.function.name + '[ARGS]' +"
                + " tool.function.arguments|tojson }}{%- endfor %}{% if tools %}[AVAILABLE_TOOLS]{% endif %}";
        String v3 = "{{- '[TOOL_CALLS] [' }}{% if tools %}[AVAILABLE_TOOLS]{% endif %}";
        assertThat(ToolCallFormat.detect(v11)).contains(ToolCallFormat.MISTRAL_ARGS);
        assertThat(ToolCallFormat.detect(v3)).contains(ToolCallFormat.MISTRAL);
        assertThat(ToolCallFormat.MISTRAL_ARGS.specialMarkers()).containsExactly("[TOOL_CALLS]", "[ARGS]");
        assertThat(ToolCallFormat.MISTRAL.specialMarkers()).containsExactly("[TOOL_CALLS]");
        assertThat(ToolCallFormat.HERMES.specialMarkers()).isEmpty();
    }
}
