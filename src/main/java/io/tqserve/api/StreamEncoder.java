package io.tqserve.api;

import io.tqserve.api.openai.ChatCompletionChunk;
import io.tqserve.api.openai.ChatLogprobs;
import io.tqserve.api.openai.Completion;
import io.tqserve.api.openai.CompletionLogprobs;
import io.tqserve.api.openai.ErrorBody;
import io.tqserve.api.openai.Usage;
import io.tqserve.api.openai.ToolCallWire;
import io.tqserve.api.openai.Wire;
import io.tqserve.engine.GenerationEvent;
import io.tqserve.model.Tokenizer;
import io.tqserve.toolcall.ChatOutputParser;
import java.util.ArrayList;
import java.util.List;

/**
 * Frames one streamed response as OpenAI does: each event {@code data: <json>} plus a blank line (written by
 * hand: Spring's ServerSentEvent writes {@code data:} without the space). Chat: a first chunk with the role, one
 * chunk per piece of text, a last choice chunk with an empty delta and the finish reason, the usage chunk with
 * {@code choices: []} when asked, then {@code data: [DONE]}. A failure after the stream started becomes one
 * {@code data: {"error": ...}} event, then [DONE]. Not thread-safe: one per stream, called in order.
 */
final class StreamEncoder {
    /** The last frame of every stream (compared by identity to end the keep-alive merge). */
    static final String DONE = "data: [DONE]\n\n";
    static final String KEEP_ALIVE = ": keep-alive\n\n";

    private final Endpoint endpoint;
    private final String id;
    private final long created;
    private final String model;
    private final String fingerprint;
    private final boolean includeUsage;
    private final boolean logprobs;
    private final Tokenizer tokenizer;
    private int textOffset;
    private final ChatOutputParser parser;

    StreamEncoder(Endpoint endpoint, String id, long created, String model, String fingerprint, boolean includeUsage,
            boolean logprobs, Tokenizer tokenizer) {
        this(endpoint, id, created, model, fingerprint, includeUsage, logprobs, tokenizer, null);
    }

    /** With a parser for reasoning and tool calls (chat), or null. */
    StreamEncoder(Endpoint endpoint, String id, long created, String model, String fingerprint, boolean includeUsage,
            boolean logprobs, Tokenizer tokenizer, ChatOutputParser parser) {
        this.parser = parser;
        this.endpoint = endpoint;
        this.id = id;
        this.created = created;
        this.model = model;
        this.fingerprint = fingerprint;
        this.includeUsage = includeUsage;
        this.logprobs = logprobs;
        this.tokenizer = tokenizer;
    }

    /** Frames sent before any token: the chat role chunk, or the echoed prompt of a completion. */
    List<String> start(String echoText) {
        if (endpoint == Endpoint.CHAT) {
            return List.of(chat(new ChatCompletionChunk.Delta("assistant", ""), null, null));
        }
        if (!echoText.isEmpty()) {
            textOffset = echoText.length();
            return List.of(completion(echoText, null, null));
        }
        return List.of();
    }

    /** Frames for one engine event. */
    List<String> on(GenerationEvent event) {
        return switch (event) {
            case GenerationEvent.Started s -> List.of();
            case GenerationEvent.Token t -> token(t);
            case GenerationEvent.Finished f -> finished(f);
            case GenerationEvent.Failed f -> List.of(error(f.message(), f.type()));
        };
    }

    private List<String> token(GenerationEvent.Token t) {
        if (parser != null) {
            ChatLogprobs lp = logprobs ? new ChatLogprobs(List.of(Logprobs.chat(t, tokenizer)), null) : null;
            return pieces(parser.feed(t.text()), lp);
        }
        if (t.text().isEmpty() && !logprobs) {
            return List.of(); // held back (a partial UTF-8 character or a possible stop string)
        }
        String frame;
        if (endpoint == Endpoint.CHAT) {
            ChatLogprobs lp = logprobs ? new ChatLogprobs(List.of(Logprobs.chat(t, tokenizer)), null) : null;
            frame = chat(new ChatCompletionChunk.Delta(null, t.text()), lp, null);
        } else {
            CompletionLogprobs lp = logprobs ? Logprobs.completionOne(t, tokenizer, textOffset) : null;
            frame = completion(t.text(), lp, null);
        }
        textOffset += t.text().length();
        return List.of(frame);
    }

    /**
     * Frames of parsed pieces, as OpenAI streams them: reasoning as {@code delta.reasoning_content}, content as
     * {@code delta.content}, a call's start as {@code delta.tool_calls[{index, id, type, function: {name,
     * arguments: ""}}]} and each arguments fragment as {@code delta.tool_calls[{index, function: {arguments}}]}.
     * Logprobs ride on the first frame (or on an empty delta when the text was held back).
     */
    private List<String> pieces(List<ChatOutputParser.Piece> pieces, ChatLogprobs lp) {
        List<String> out = new ArrayList<>(pieces.size() + 1);
        for (ChatOutputParser.Piece p : pieces) {
            ChatLogprobs l = out.isEmpty() ? lp : null;
            out.add(chat(switch (p) {
                case ChatOutputParser.Reasoning r -> new ChatCompletionChunk.Delta(null, null, r.text(), null);
                case ChatOutputParser.Content c -> new ChatCompletionChunk.Delta(null, c.text());
                case ChatOutputParser.CallStart c -> new ChatCompletionChunk.Delta(null, null, null, List.of(
                        new ToolCallWire(c.index(), c.id(), "function", new ToolCallWire.Function(c.name(), ""))));
                case ChatOutputParser.CallArguments a -> new ChatCompletionChunk.Delta(null, null, null, List.of(
                        new ToolCallWire(a.index(), null, null, new ToolCallWire.Function(null, a.fragment()))));
            }, l, null));
        }
        if (out.isEmpty() && lp != null) {
            out.add(chat(new ChatCompletionChunk.Delta(null, ""), lp, null));
        }
        return out;
    }

    private List<String> finished(GenerationEvent.Finished f) {
        List<String> out = new ArrayList<>(3);
        if (parser != null) {
            out.addAll(pieces(parser.feed(f.trailingText()), null));
            out.addAll(pieces(parser.finish(), null));
            String reason = parser.sawCalls() ? "tool_calls" : f.reason().wireName();
            out.add(chat(new ChatCompletionChunk.Delta(null, null), null, reason));
            if (includeUsage) {
                out.add(frame(new ChatCompletionChunk(id, created, model, fingerprint, List.of(),
                        Usage.of(f.promptTokens(), f.completionTokens(), f.cachedTokens()))));
            }
            return out;
        }
        if (!f.trailingText().isEmpty()) {
            out.add(endpoint == Endpoint.CHAT ? chat(new ChatCompletionChunk.Delta(null, f.trailingText()), null, null)
                    : completion(f.trailingText(), null, null));
            textOffset += f.trailingText().length();
        }
        String reason = f.reason().wireName();
        out.add(endpoint == Endpoint.CHAT ? chat(new ChatCompletionChunk.Delta(null, null), null, reason)
                : completion("", null, reason));
        if (includeUsage) {
            Usage usage = Usage.of(f.promptTokens(), f.completionTokens(), f.cachedTokens());
            out.add(endpoint == Endpoint.CHAT
                    ? frame(new ChatCompletionChunk(id, created, model, fingerprint, List.of(), usage))
                    : frame(new Completion(id, created, model, fingerprint, List.of(), usage)));
        }
        return out;
    }

    /** The error event of a stream that failed after it started. */
    String error(String message, String type) {
        return frame(ErrorBody.of(message, type, null, null));
    }

    private String chat(ChatCompletionChunk.Delta delta, ChatLogprobs lp, String finishReason) {
        return frame(new ChatCompletionChunk(id, created, model, fingerprint,
                List.of(new ChatCompletionChunk.Choice(0, delta, lp, finishReason)), null));
    }

    private String completion(String text, CompletionLogprobs lp, String finishReason) {
        return frame(new Completion(id, created, model, fingerprint,
                List.of(new Completion.Choice(text, 0, lp, finishReason)), null));
    }

    static String frame(Object wireRecord) {
        return "data: " + Wire.json(wireRecord) + "\n\n";
    }
}
