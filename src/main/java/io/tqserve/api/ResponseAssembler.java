package io.tqserve.api;

import io.tqserve.api.openai.ChatCompletion;
import io.tqserve.api.openai.ChatLogprobs;
import io.tqserve.api.openai.Completion;
import io.tqserve.api.openai.CompletionLogprobs;
import io.tqserve.api.openai.Usage;
import io.tqserve.api.openai.ToolCallWire;
import io.tqserve.api.openai.Wire;
import io.tqserve.engine.GenerationEvent;
import io.tqserve.model.Tokenizer;
import io.tqserve.toolcall.ChatOutputParser;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.http.HttpStatus;

/** Collects one sequence's events into a non-streamed chat completion or completion body. */
final class ResponseAssembler {
    private final Endpoint endpoint;
    private final String id;
    private final long created;
    private final String model;
    private final String fingerprint;
    private final boolean logprobs;
    private final Tokenizer tokenizer;
    private final StringBuilder text = new StringBuilder();
    private final List<ChatLogprobs.TokenLogprob> chatLogprobs = new ArrayList<>();
    private final List<String> tokens = new ArrayList<>();
    private final List<Double> tokenLogprobs = new ArrayList<>();
    private final List<Map<String, Double>> topLogprobs = new ArrayList<>();
    private final List<Integer> offsets = new ArrayList<>();
    private GenerationEvent.Finished finished;
    private GenerationEvent.Failed failed;
    private final ChatOutputParser parser;

    ResponseAssembler(Endpoint endpoint, String id, long created, String model, String fingerprint, boolean logprobs,
            Tokenizer tokenizer, String echoText) {
        this(endpoint, id, created, model, fingerprint, logprobs, tokenizer, echoText, null);
    }

    /** With a parser for reasoning and tool calls (chat), or null. */
    ResponseAssembler(Endpoint endpoint, String id, long created, String model, String fingerprint, boolean logprobs,
            Tokenizer tokenizer, String echoText, ChatOutputParser parser) {
        this.parser = parser;
        this.endpoint = endpoint;
        this.id = id;
        this.created = created;
        this.model = model;
        this.fingerprint = fingerprint;
        this.logprobs = logprobs;
        this.tokenizer = tokenizer;
        text.append(echoText);
    }

    void on(GenerationEvent event) {
        switch (event) {
            case GenerationEvent.Started s -> {
            }
            case GenerationEvent.Token t -> {
                if (logprobs) {
                    if (endpoint == Endpoint.CHAT) {
                        chatLogprobs.add(Logprobs.chat(t, tokenizer));
                    } else {
                        Logprobs.completion(t, tokenizer, text.length(), tokens, tokenLogprobs, topLogprobs, offsets);
                    }
                }
                text.append(t.text());
            }
            case GenerationEvent.Finished f -> {
                text.append(f.trailingText());
                finished = f;
            }
            case GenerationEvent.Failed f -> failed = f;
        }
    }

    /** The failure the sequence ended with, or null. */
    GenerationEvent.Failed failure() {
        return failed;
    }

    /** The response body; a failed or unfinished sequence becomes a 500 with an OpenAI error body. */
    String json() {
        if (failed != null || finished == null) {
            throw new ApiException(HttpStatus.INTERNAL_SERVER_ERROR, failed == null ? "server_error" : failed.type(),
                    null, null, failed == null ? "the sequence ended without a result" : failed.message(), null);
        }
        Usage usage = Usage.of(finished.promptTokens(), finished.completionTokens(), finished.cachedTokens());
        String reason = finished.reason().wireName();
        if (endpoint == Endpoint.CHAT) {
            ChatLogprobs lp = logprobs ? new ChatLogprobs(chatLogprobs, null) : null;
            ChatCompletion.Message message = new ChatCompletion.Message("assistant", text.toString(), null);
            if (parser != null) {
                StringBuilder reasoning = new StringBuilder();
                StringBuilder content = new StringBuilder();
                List<ChatOutputParser.Piece> pieces = new ArrayList<>(parser.feed(text.toString()));
                pieces.addAll(parser.finish());
                for (ChatOutputParser.Piece piece : pieces) {
                    switch (piece) {
                        case ChatOutputParser.Reasoning r -> reasoning.append(r.text());
                        case ChatOutputParser.Content c -> content.append(c.text());
                        case ChatOutputParser.CallStart c -> {
                        }
                        case ChatOutputParser.CallArguments a -> {
                        }
                    }
                }
                List<ToolCallWire> calls = parser.calls().stream()
                        .map(c -> ToolCallWire.of(c.id(), c.name(), c.arguments())).toList();
                if (!calls.isEmpty()) {
                    reason = "tool_calls";
                }
                message = new ChatCompletion.Message("assistant",
                        calls.isEmpty() || !content.isEmpty() ? content.toString() : null, null,
                        reasoning.isEmpty() ? null : reasoning.toString(), calls);
            }
            return Wire.json(new ChatCompletion(id, created, model, fingerprint, List.of(new ChatCompletion.Choice(0,
                    message, lp, reason)), usage));
        }
        CompletionLogprobs lp = logprobs ? new CompletionLogprobs(tokens, tokenLogprobs, topLogprobs, offsets) : null;
        return Wire.json(new Completion(id, created, model, fingerprint,
                List.of(new Completion.Choice(text.toString(), 0, lp, reason)), usage));
    }
}
