package io.tqserve.toolcall;

import static org.assertj.core.api.Assertions.assertThat;

import io.tqserve.constraint.ConstraintLimits;
import io.tqserve.constraint.ConstraintState;
import io.tqserve.constraint.Grammar;
import io.tqserve.constraint.TokenConstraint;
import io.tqserve.constraint.Vocabulary;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The call grammars of the table's entries over a small vocabulary in which the Mistral markers are special tokens
 * (the bytes of their grammar slots, as {@link ChatFormat#constraintTokenBytes} gives them): {@code auto} allows
 * free text, or the {@code [TOOL_CALLS]} token and then only a valid call; the marker spelled as text is refused,
 * the marker token is refused inside free text and inside arguments, and a byte-fallback 0xFF piece never comes.
 */
class ToolCallGrammarTest {
    static final List<String> TEXT = List.of("a", "b", " ", "[", "TOOL", "_CALLS", "]", "{", "}", "\"", ":", ",",
            "city", "zone", "UTC", "CET", "get", "_weather", "_time", "\"name\"", "\"arguments\"");
    static final int EOS = 0;
    static final List<ToolSpec> TOOLS = List.of(
            new ToolSpec("get_weather", Map.of("type", "object", "properties", Map.of("city", Map.of("type",
                    "string")), "required", List.of("city"), "additionalProperties", false)),
            new ToolSpec("get_time", Map.of("type", "object", "properties", Map.of("zone", Map.of("enum",
                    List.of("UTC", "CET"))), "required", List.of("zone"), "additionalProperties", false)));

    /** Token ids: 0 EOS, 1 [TOOL_CALLS], 2 [ARGS], 3 a byte-fallback 0xFF piece, then {@link #TEXT}. */
    static Vocabulary vocabulary() {
        List<byte[]> b = new ArrayList<>();
        b.add(null);
        b.add(Grammar.specialBytes(ToolCallFormat.MARKER_SLOT));
        b.add(Grammar.specialBytes(ToolCallFormat.ARGS_MARKER_SLOT));
        b.add(null); // 0xFF dropped by constraintTokenBytes
        TEXT.forEach(t -> b.add(t.getBytes(StandardCharsets.UTF_8)));
        return new Vocabulary(b.toArray(byte[][]::new));
    }

    static int id(String text) {
        return switch (text) {
            case "[TOOL_CALLS]" -> 1;
            case "[ARGS]" -> 2;
            default -> 4 + TEXT.indexOf(text);
        };
    }

    static boolean allowed(ConstraintState s, String token) {
        int t = id(token);
        return (s.allowed(200)[t >>> 6] & (1L << t)) != 0;
    }

    static ConstraintState follow(TokenConstraint c, String... tokens) {
        ConstraintState s = new ConstraintState(c, new int[] {EOS}, -1);
        for (String t : tokens) {
            assertThat(allowed(s, t)).as(t).isTrue();
            s.advance(id(t));
        }
        return s;
    }

    @Test
    void mistralAutoIsFreeTextOrTheMarkerTokenThenAValidCall() {
        TokenConstraint c = new TokenConstraint(ToolCallFormat.MISTRAL.autoCalls(TOOLS, true,
                ConstraintLimits.DEFAULT, true), vocabulary());
        ConstraintState free = follow(c, "a", " ", "b");
        assertThat(free.accepting()).isTrue();
        assertThat(allowed(free, "[TOOL_CALLS]")).isTrue(); // content, then calls
        // the marker spelled as text never completes inside free text
        ConstraintState spelled = follow(c, "[", "TOOL", "_CALLS");
        assertThat(allowed(spelled, "]")).isFalse();
        // after the marker token: only the call list, no free text, no EOS until it is complete
        ConstraintState call = follow(c, "[TOOL_CALLS]");
        assertThat(allowed(call, "a")).isFalse();
        assertThat(call.accepting()).isFalse();
        call = follow(c, "[TOOL_CALLS]", "[", "{", "\"name\"", ":", " ", "\"", "get", "_time", "\"", ",", " ",
                "\"arguments\"", ":", " ", "{", "\"", "zone", "\"", ":", " ", "\"", "CET", "\"", "}", "}", "]");
        assertThat(call.accepting()).isTrue();
        assertThat(allowed(call, "a")).isFalse();
    }

    @Test
    void mistralNameArgsCallsWriteBothMarkersAsTokens() {
        TokenConstraint forced = new TokenConstraint(ToolCallFormat.MISTRAL_ARGS.forcedCalls(TOOLS, true,
                ConstraintLimits.DEFAULT, true), vocabulary());
        ConstraintState s = new ConstraintState(forced, new int[] {EOS}, -1);
        assertThat(allowed(s, "[TOOL_CALLS]")).isTrue();
        assertThat(allowed(s, "[")).isFalse(); // the marker as text is not the marker
        s = follow(forced, "[TOOL_CALLS]", "get", "_weather");
        assertThat(allowed(s, "[ARGS]")).isTrue();
        assertThat(allowed(s, "[")).isFalse();
        s = follow(forced, "[TOOL_CALLS]", "get", "_weather", "[ARGS]", "{", "\"", "city", "\"", ":", "\"");
        assertThat(allowed(s, "a")).isTrue();
        assertThat(allowed(s, "[TOOL_CALLS]")).isFalse(); // no special token inside a string
        s = follow(forced, "[TOOL_CALLS]", "get", "_weather", "[ARGS]", "{", "\"", "city", "\"", ":", "\"", "a", "\"",
                "}");
        assertThat(s.accepting()).isTrue();
        assertThat(allowed(s, "[TOOL_CALLS]")).isTrue(); // a second call
        TokenConstraint auto = new TokenConstraint(ToolCallFormat.MISTRAL_ARGS.autoCalls(TOOLS, true,
                ConstraintLimits.DEFAULT, true), vocabulary());
        assertThat(follow(auto, "a", "b").accepting()).isTrue();
        assertThat(allowed(follow(auto, "a"), "[ARGS]")).isFalse();
        assertThat(follow(auto, "a", "[TOOL_CALLS]").accepting()).isFalse();
    }

    @Test
    void withoutMarkerTokensTheMarkersAreText() {
        Grammar g = ToolCallFormat.MISTRAL_ARGS.forcedCalls(TOOLS, false, ConstraintLimits.DEFAULT, false);
        List<byte[]> b = new ArrayList<>();
        b.add(null);
        TEXT.forEach(t -> b.add(t.getBytes(StandardCharsets.UTF_8)));
        b.add("ARGS".getBytes(StandardCharsets.UTF_8));
        TokenConstraint c = new TokenConstraint(g, new Vocabulary(b.toArray(byte[][]::new)));
        ConstraintState s = new ConstraintState(c, new int[] {EOS}, -1);
        int open = 1 + TEXT.indexOf("[");
        assertThat((s.allowed(100)[0] & (1L << open)) != 0).isTrue();
    }
}
