package io.tqserve.toolcall;

import java.util.ArrayList;
import java.util.List;

/**
 * Splits generated chat text, as it streams in, into reasoning, answer content and tool calls. Text that could
 * still turn into markup ({@code <think>}, {@code </think>}, a tool-call marker) is held back until it is clear,
 * so no markup ever reaches the content; a call is emitted once its text is complete. Used for streamed and
 * non-streamed responses alike (the latter feed everything, then {@link #finish()}), so both give the same
 * result. One per response, not thread-safe.
 */
public final class ChatOutputParser {
    private static final String THINK = "<think>";
    private static final String END_THINK = "</think>";
    private static final String HERMES_END = "</tool_call>";

    /** One piece of output: reasoning text, content text, or a complete tool call. */
    public record Piece(String reasoning, String content, ToolCall call) {
        static Piece reasoning(String s) {
            return new Piece(s, null, null);
        }

        static Piece content(String s) {
            return new Piece(null, s, null);
        }

        static Piece call(ToolCall c) {
            return new Piece(null, null, c);
        }
    }

    private enum Phase { MAYBE_THINK, REASONING, CONTENT_START, CONTENT, CALLS }

    private final ToolCallFormat format;
    private final boolean bare;
    private final StringBuilder pending = new StringBuilder();
    private final List<Piece> out = new ArrayList<>();
    private Phase phase;
    private boolean contentStarted;
    private int calls;

    /**
     * @param format            the template's tool-call format, or null when the request has no tools
     * @param reasoning         the template uses {@code <think>} blocks
     * @param startsInReasoning the prompt ends inside an open {@code <think>} block
     * @param bare              a call was forced: the whole output is calls in the format's bare form
     */
    public ChatOutputParser(ToolCallFormat format, boolean reasoning, boolean startsInReasoning, boolean bare) {
        this.format = format;
        this.bare = bare && format != null;
        this.phase = startsInReasoning ? Phase.REASONING : reasoning ? Phase.MAYBE_THINK : Phase.CONTENT_START;
    }

    /** Whether any tool call was emitted. */
    public boolean sawCalls() {
        return calls > 0;
    }

    /** Pieces that became certain with this text. */
    public List<Piece> feed(String text) {
        pending.append(text);
        process(false);
        return drain();
    }

    /** The rest, at the end of the output. */
    public List<Piece> finish() {
        process(true);
        switch (phase) {
            case MAYBE_THINK, CONTENT_START, CONTENT -> emitContent(pending.toString(), !sawCalls());
            case REASONING -> emitReasoning(pending.toString());
            case CALLS -> {
                ToolCallFormat.Parsed p = format.parse(pending.toString(), bare);
                emitContent(p.content(), p.calls().isEmpty());
                p.calls().forEach(this::emitCall);
            }
        }
        pending.setLength(0);
        return drain();
    }

    private void process(boolean end) {
        while (true) {
            String s = pending.toString();
            switch (phase) {
                case MAYBE_THINK -> {
                    String t = s.stripLeading();
                    if (t.startsWith(THINK)) {
                        reset(t.substring(THINK.length()));
                        phase = Phase.REASONING;
                    } else if (THINK.startsWith(t) && !end) {
                        return;
                    } else {
                        phase = Phase.CONTENT_START;
                    }
                }
                case REASONING -> {
                    int i = s.indexOf(END_THINK);
                    if (i < 0) {
                        int hold = end ? 0 : heldSuffix(s, END_THINK);
                        emitReasoning(s.substring(0, s.length() - hold));
                        reset(s.substring(s.length() - hold));
                        return;
                    }
                    emitReasoning(s.substring(0, i));
                    reset(s.substring(i + END_THINK.length()));
                    phase = Phase.CONTENT_START;
                }
                case CONTENT_START -> {
                    String t = s.stripLeading();
                    if (format == null) {
                        reset(t);
                        phase = Phase.CONTENT;
                    } else if (bare) {
                        phase = Phase.CALLS;
                    } else if (format == ToolCallFormat.LLAMA3_JSON && (t.startsWith("{")
                            || t.startsWith(format.marker()))) {
                        phase = Phase.CALLS; // the whole answer may be a call: decided at the end
                    } else if (!end && (t.isEmpty() || (format == ToolCallFormat.LLAMA3_JSON
                            && format.marker().startsWith(t)))) {
                        return;
                    } else {
                        reset(t);
                        phase = Phase.CONTENT;
                    }
                }
                case CONTENT -> {
                    if (format == null || format == ToolCallFormat.LLAMA3_JSON) {
                        emitContent(s, false);
                        reset("");
                        return;
                    }
                    int i = s.indexOf(format.marker());
                    if (i < 0) {
                        int hold = end ? 0 : heldSuffix(s, format.marker());
                        String safe = s.substring(0, s.length() - hold);
                        String kept = safe.stripTrailing(); // whitespace before a call is not content
                        emitContent(kept, false);
                        reset(safe.substring(kept.length()) + s.substring(s.length() - hold));
                        return;
                    }
                    emitContent(s.substring(0, i).stripTrailing(), false);
                    reset(s.substring(i));
                    phase = Phase.CALLS;
                }
                case CALLS -> {
                    if (format != ToolCallFormat.HERMES) {
                        return; // Llama 3 and Mistral calls run to the end of the output
                    }
                    int close = s.indexOf(HERMES_END);
                    if (close < 0) {
                        return;
                    }
                    ToolCallFormat.Parsed p = format.parse(s.substring(0, close + HERMES_END.length()), false);
                    emitContent(p.content(), false);
                    p.calls().forEach(this::emitCall);
                    reset(s.substring(close + HERMES_END.length()));
                    phase = Phase.CONTENT_START;
                }
            }
        }
    }

    private void reset(String s) {
        pending.setLength(0);
        pending.append(s);
    }

    /** Length of the longest suffix of {@code s} that is a proper prefix of {@code marker}. */
    static int heldSuffix(String s, String marker) {
        for (int n = Math.min(s.length(), marker.length() - 1); n > 0; n--) {
            if (s.regionMatches(s.length() - n, marker, 0, n)) {
                return n;
            }
        }
        return 0;
    }

    private void emitReasoning(String s) {
        if (!s.isEmpty()) {
            out.add(Piece.reasoning(s));
        }
    }

    private void emitContent(String s, boolean keepTrailing) {
        String t = contentStarted ? s : s.stripLeading();
        if (!keepTrailing && !contentStarted && t.isBlank()) {
            return;
        }
        if (!t.isEmpty()) {
            contentStarted = true;
            out.add(Piece.content(t));
        }
    }

    private void emitCall(ToolCall c) {
        calls++;
        out.add(Piece.call(c));
    }

    private List<Piece> drain() {
        List<Piece> pieces = List.copyOf(out);
        out.clear();
        return pieces;
    }
}
