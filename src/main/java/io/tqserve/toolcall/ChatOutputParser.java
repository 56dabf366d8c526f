package io.tqserve.toolcall;

import java.util.ArrayList;
import java.util.List;

/**
 * Splits generated chat text, as it streams in, into reasoning, answer content and tool calls, reading the
 * reasoning markers and the tool-call entry of the model's {@link ChatFormat}. Text that could still turn into
 * markup ({@code <think>}, {@code </think>}, a tool-call marker) is held back until it is clear, so no markup ever
 * reaches the content. A call is announced ({@link CallStart}: index, id, name) as soon as its name is complete,
 * then its arguments follow as {@link CallArguments} fragments as the tokens arrive: the fragments of a call
 * concatenate to exactly its final arguments, the JSON text the model wrote. Where a call ends is decided by the
 * JSON structure of the call object, never by searching for an end marker, so markup inside an argument string
 * cannot end a call early. Used for streamed and non-streamed responses alike (the latter feed everything, then
 * {@link #finish()}), so both give the same result. One per response, not thread-safe.
 */
public final class ChatOutputParser {
    /** One piece of output. */
    public sealed interface Piece permits Reasoning, Content, CallStart, CallArguments {
    }

    /** Reasoning text (the inside of a {@code <think>} block). */
    public record Reasoning(String text) implements Piece {
    }

    /** Answer text. */
    public record Content(String text) implements Piece {
    }

    /** A tool call begins: {@code index} counts the response's calls from 0. */
    public record CallStart(int index, String id, String name) implements Piece {
    }

    /** The next fragment of the arguments of call {@code index} (JSON text). */
    public record CallArguments(int index, String fragment) implements Piece {
    }

    private enum Phase { MAYBE_THINK, REASONING, CONTENT_START, CONTENT, LIST_OPEN, CALL_OPEN, CALL, CALL_NAME, ARGS,
        CALL_CLOSE,
        AFTER_CALL, DONE }

    private final ToolCallFormat format;
    private final ChatFormat.Reasoning reasoning;
    private final boolean bare;
    private final boolean parallel;
    private final StringBuilder pending = new StringBuilder();
    private final StringBuilder raw = new StringBuilder(); // the text of the call list so far (content if it fails)
    private final List<Piece> out = new ArrayList<>();
    private final List<ToolCall> calls = new ArrayList<>();
    private Phase phase;
    private boolean contentStarted;
    private CallScan scan;
    private StringBuilder arguments; // of the call in progress, once announced

    /**
     * @param format            the template's tool-call entry, or null when the request has no tools
     * @param reasoning         the template's reasoning markers, or null
     * @param startsInReasoning the prompt ends inside an open reasoning block
     * @param bare              a call was forced: the output is a list of calls, its marker optional
     * @param parallel          several calls may follow each other (else text after the first call is dropped)
     */
    public ChatOutputParser(ToolCallFormat format, ChatFormat.Reasoning reasoning, boolean startsInReasoning,
            boolean bare, boolean parallel) {
        this.format = format;
        this.reasoning = reasoning;
        this.bare = bare && format != null;
        this.parallel = parallel;
        this.phase = reasoning != null && startsInReasoning ? Phase.REASONING
                : reasoning != null ? Phase.MAYBE_THINK : Phase.CONTENT_START;
    }

    /** Whether any tool call was announced. */
    public boolean sawCalls() {
        return !calls.isEmpty() || arguments != null;
    }

    /** The complete calls so far (all of them after {@link #finish()}). */
    public List<ToolCall> calls() {
        return List.copyOf(calls);
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
            case CALL, ARGS -> {
                if (arguments != null) {
                    endCall(); // cut short (max_tokens): the arguments as far as they came
                } else {
                    fail();
                }
            }
            case CALL_NAME -> fail();
            case LIST_OPEN, CALL_OPEN -> {
                if (raw.isEmpty() && pending.toString().isBlank()) {
                    break;
                }
                fail();
            }
            case CALL_CLOSE, AFTER_CALL, DONE -> {
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
                    if (t.startsWith(reasoning.start())) {
                        reset(t.substring(reasoning.start().length()));
                        phase = Phase.REASONING;
                    } else if (reasoning.start().startsWith(t) && !end) {
                        return;
                    } else {
                        phase = Phase.CONTENT_START;
                    }
                }
                case REASONING -> {
                    int i = s.indexOf(reasoning.end());
                    if (i < 0) {
                        int hold = end ? 0 : heldSuffix(s, reasoning.end());
                        emitReasoning(s.substring(0, s.length() - hold));
                        reset(s.substring(s.length() - hold));
                        return;
                    }
                    emitReasoning(s.substring(0, i));
                    reset(s.substring(i + reasoning.end().length()));
                    phase = Phase.CONTENT_START;
                }
                case CONTENT_START -> {
                    String t = s.stripLeading();
                    if (format == null) {
                        reset(t);
                        phase = Phase.CONTENT;
                    } else if (bare) {
                        reset(t);
                        phase = Phase.LIST_OPEN;
                    } else if (format.bareStart() && (t.startsWith("{") || t.startsWith(format.marker()))) {
                        reset(t);
                        phase = Phase.LIST_OPEN;
                    } else if (!end && (t.isEmpty() || (format.bareStart() && format.marker().startsWith(t)))) {
                        return;
                    } else {
                        reset(t);
                        phase = Phase.CONTENT;
                    }
                }
                case CONTENT -> {
                    if (format == null || format.bareStart()) {
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
                    String before = s.substring(0, i);
                    String kept = before.stripTrailing();
                    emitContent(kept, false);
                    raw.append(before, kept.length(), before.length()); // content again if no call follows
                    reset(s.substring(i));
                    phase = Phase.LIST_OPEN;
                }
                case LIST_OPEN -> {
                    if (!format.markerOpensEachCall()) {
                        Boolean marker = expect(s, format.marker(), end);
                        if (marker == null) {
                            return;
                        }
                        s = pending.toString();
                    }
                    Boolean open = expect(s, format.listOpen(), end);
                    if (open == null) {
                        return;
                    }
                    if (!open && !format.listOpen().isBlank()) {
                        fail();
                        continue;
                    }
                    phase = Phase.CALL_OPEN;
                }
                case CALL_OPEN -> {
                    Boolean open = expect(s, format.callOpen(), end);
                    if (open == null) {
                        return;
                    }
                    if (!open && !format.callOpen().isBlank()) {
                        fail();
                        continue;
                    }
                    if (format.argsMarker().isEmpty()) {
                        scan = new CallScan(format.argumentsKey());
                        phase = Phase.CALL;
                    } else {
                        phase = Phase.CALL_NAME;
                    }
                }
                case CALL_NAME -> {
                    // name[ARGS]: the name is the text before the arguments marker
                    int i = s.indexOf(format.argsMarker());
                    String name = (i >= 0 ? s.substring(0, i)
                            : s.substring(0, s.length() - (end ? 0 : heldSuffix(s, format.argsMarker())))).strip();
                    if (!ArgumentsScan.validName(name) || (i < 0 && (end || s.length() > ArgumentsScan.MAX_NAME))) {
                        fail();
                        continue;
                    }
                    if (i < 0) {
                        return;
                    }
                    raw.append(s, 0, i + format.argsMarker().length());
                    reset(s.substring(i + format.argsMarker().length()));
                    currentName = name;
                    currentId = ToolCallFormat.newId();
                    out.add(new CallStart(calls.size(), currentId, name));
                    arguments = new StringBuilder();
                    argsScan = new ArgumentsScan();
                    phase = Phase.ARGS;
                }
                case ARGS -> {
                    if (s.isEmpty()) {
                        return;
                    }
                    int before = argsScan.text.length();
                    int consumed = argsScan.feed(s);
                    raw.append(s, 0, consumed);
                    reset(s.substring(consumed));
                    if (argsScan.text.length() > before) {
                        String fragment = argsScan.text.substring(before);
                        arguments.append(fragment);
                        out.add(new CallArguments(calls.size(), fragment));
                    }
                    if (argsScan.failed) { // not an object: the call ends with what came (none: {})
                        endCall();
                        phase = Phase.CONTENT;
                        continue;
                    }
                    if (!argsScan.done) {
                        return;
                    }
                    endCall();
                    phase = Phase.CALL_CLOSE;
                }
                case CALL -> {
                    if (s.isEmpty()) {
                        return;
                    }
                    int consumed = scan.feed(s);
                    raw.append(s, 0, consumed);
                    reset(s.substring(consumed));
                    if (!scan.failed) {
                        announce();
                    }
                    if (scan.failed) {
                        if (arguments != null) { // an announced call whose object broke: it ends there
                            endCall();
                            phase = Phase.CONTENT;
                        } else {
                            fail();
                        }
                        continue;
                    }
                    if (!scan.done) {
                        return;
                    }
                    if (arguments == null && !scanWhole()) {
                        fail();
                        continue;
                    }
                    endCall();
                    phase = Phase.CALL_CLOSE;
                }
                case CALL_CLOSE -> {
                    Boolean close = expect(s, format.callClose(), end);
                    if (close == null) {
                        return;
                    }
                    phase = parallel ? Phase.AFTER_CALL : Phase.DONE;
                }
                case AFTER_CALL -> {
                    String t = s.stripLeading();
                    String sep = format.separator().strip();
                    String open = format.callOpen().strip();
                    String close = format.listClose().strip();
                    if (!sep.isEmpty() && t.startsWith(sep)) {
                        raw.append(s, 0, s.length() - t.length() + sep.length());
                        reset(t.substring(sep.length()));
                        phase = Phase.CALL_OPEN;
                    } else if (sep.isEmpty() && !open.isEmpty() && t.startsWith(open)) {
                        raw.append(s, 0, s.length() - t.length());
                        reset(t);
                        phase = Phase.CALL_OPEN;
                    } else if (!close.isEmpty() && t.startsWith(close)) {
                        reset(t.substring(close.length()));
                        phase = Phase.DONE;
                    } else if (!end && (t.isEmpty() || (!sep.isEmpty() && sep.startsWith(t))
                            || (sep.isEmpty() && open.startsWith(t)) || (!close.isEmpty() && close.startsWith(t)))) {
                        return;
                    } else {
                        // text after the calls: content again (Hermes allows more calls after it)
                        raw.setLength(0);
                        reset(t);
                        phase = Phase.CONTENT;
                    }
                }
                case DONE -> {
                    reset(""); // the list is closed (or one call was allowed): nothing after it is output
                    return;
                }
            }
        }
    }

    /**
     * Consumes optional whitespace and then {@code text} (stripped) from the pending text: true if it was there,
     * false if something else is (nothing consumed but the whitespace), null if it cannot tell yet.
     */
    private Boolean expect(String s, String text, boolean end) {
        String want = text.strip();
        String t = s.stripLeading();
        if (want.isEmpty()) {
            return true;
        }
        if (t.startsWith(want)) {
            raw.append(s, 0, s.length() - t.length() + want.length());
            reset(t.substring(want.length()));
            return true;
        }
        if (!end && want.startsWith(t)) {
            return null;
        }
        return false;
    }

    /** Announces the call in progress once its name is known and it is the first member; streams its arguments. */
    private void announce() {
        if (arguments == null && scan.nameFirst && scan.name != null) {
            String name = scan.nameText();
            if (name == null) {
                scan.failed = true;
                return;
            }
            arguments = new StringBuilder();
            out.add(new CallStart(calls.size(), ToolCallFormat.newId(), name));
            currentName = name;
            currentId = ((CallStart) out.getLast()).id();
        }
        if (arguments != null && scan.argsStart >= 0 && scan.argsObject) {
            int to = scan.argsEnd >= 0 ? scan.argsEnd : scan.text.length();
            int from = scan.argsStart + arguments.length();
            if (to > from) {
                String fragment = scan.text.substring(from, to);
                arguments.append(fragment);
                out.add(new CallArguments(calls.size(), fragment));
            }
        }
    }

    private String currentName;
    private String currentId;
    private ArgumentsScan argsScan;

    /** A call object read whole (its members were not in streaming order): announced and argued at once. */
    private boolean scanWhole() {
        CallScan.Whole w = scan.whole(format.argumentsKey());
        if (w == null) {
            return false;
        }
        currentName = w.name();
        currentId = ToolCallFormat.newId();
        out.add(new CallStart(calls.size(), currentId, currentName));
        arguments = new StringBuilder();
        arguments.append(w.arguments());
        out.add(new CallArguments(calls.size(), w.arguments()));
        return true;
    }

    private void endCall() {
        if (arguments.isEmpty()) {
            // no arguments member, or arguments written as a string: one fragment with the object text
            String text = scan == null ? "{}" : scan.argumentsNotAnObject();
            arguments.append(text);
            out.add(new CallArguments(calls.size(), text));
        }
        calls.add(new ToolCall(currentId, currentName, arguments.toString()));
        arguments = null;
        raw.setLength(0);
    }

    /** The call list is not well formed: what was taken for it is content after all. */
    private void fail() {
        String text = raw + pending.toString();
        raw.setLength(0);
        scan = null;
        emitContent(text, false);
        reset("");
        phase = Phase.CONTENT;
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
            out.add(new Reasoning(s));
        }
    }

    private void emitContent(String s, boolean keepTrailing) {
        String t = contentStarted ? s : s.stripLeading();
        if (!keepTrailing && !contentStarted && t.isBlank()) {
            return;
        }
        if (!t.isEmpty()) {
            contentStarted = true;
            out.add(new Content(t));
        }
    }

    private List<Piece> drain() {
        List<Piece> pieces = List.copyOf(out);
        out.clear();
        return pieces;
    }
}
