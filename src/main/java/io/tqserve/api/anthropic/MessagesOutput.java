package io.tqserve.api.anthropic;

import io.tqserve.api.ApiException;
import io.tqserve.api.WireOutput;
import io.tqserve.api.openai.Wire;
import io.tqserve.engine.FinishReason;
import io.tqserve.engine.GenerationEvent;
import io.tqserve.toolcall.ChatOutputParser;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * The answer of a Messages request as Anthropic writes it. Non-streamed: the {@code message} object with its
 * content blocks ({@code thinking}, {@code text}, {@code tool_use}), {@code stop_reason} ({@code end_turn},
 * {@code max_tokens}, {@code stop_sequence}, {@code tool_use}), {@code stop_sequence} and {@code usage}
 * ({@code input_tokens} counts the prompt tokens not read from the prompt cache, {@code cache_read_input_tokens}
 * those that were). Streamed: {@code message_start} (when the lane takes the request) and a {@code ping}, then
 * per block {@code content_block_start}, {@code content_block_delta}s ({@code thinking_delta}, {@code text_delta},
 * {@code input_json_delta}s with a call's input as it is generated) and {@code content_block_stop}, then
 * {@code message_delta} with the stop reason and the usage, and {@code message_stop}; each frame is
 * {@code event: <type>} plus {@code data: <json>}. Keep-alives are {@code ping} events; a failure after the start
 * is an {@code error} event.
 */
public final class MessagesOutput implements WireOutput {
    private enum Kind { THINKING, TEXT, TOOL }

    private final String id;
    private final String model;
    private final int promptTokens;
    private final ChatOutputParser parser;
    private int index = -1;
    private Kind open;
    private boolean sawCalls;
    private boolean started;

    /**
     * @param id           the message id ({@code msg_...})
     * @param model        the model named in the answer
     * @param promptTokens the prompt's tokens
     * @param parser       the split into reasoning, text and tool calls, or null when the text is the answer as it is
     */
    public MessagesOutput(String id, String model, int promptTokens, ChatOutputParser parser) {
        this.id = id;
        this.model = model;
        this.promptTokens = promptTokens;
        this.parser = parser;
    }

    @Override
    public List<String> start() {
        return List.of();
    }

    @Override
    public String keepAlive() {
        return PING;
    }

    private static final String PING = "event: ping\ndata: {\"type\":\"ping\"}\n\n";

    @Override
    public List<String> on(GenerationEvent event) {
        List<String> out = new ArrayList<>();
        switch (event) {
            case GenerationEvent.Started s -> {
                if (!started) {
                    started = true;
                    ObjectNode message = message(List.of(), null, null);
                    message.set("usage", usage(promptTokens, s.cachedTokens(), 0));
                    out.add(frame("message_start", node("message_start").set("message", message)));
                    out.add(PING);
                }
            }
            case GenerationEvent.Token t -> pieces(pieces(t.text()), out);
            case GenerationEvent.Finished f -> {
                pieces(pieces(f.trailingText()), out);
                if (parser != null) {
                    pieces(parser.finish(), out);
                }
                close(out);
                ObjectNode delta = node("message_delta");
                delta.putObject("delta").put("stop_reason", stopReason(f, sawCalls))
                        .put("stop_sequence", stopSequence(f, sawCalls));
                delta.set("usage", usage(f.promptTokens(), f.cachedTokens(), f.completionTokens()));
                out.add(frame("message_delta", delta));
                out.add(frame("message_stop", node("message_stop")));
            }
            case GenerationEvent.Failed f -> {
            }
        }
        return out;
    }

    @Override
    public List<String> failure(ApiException error) {
        return List.of(frame("error", AnthropicErrors.node(error)));
    }

    @Override
    public String body(List<GenerationEvent> events) {
        GenerationEvent.Finished finished = WireOutput.finished(events);
        StringBuilder text = new StringBuilder();
        for (GenerationEvent e : events) {
            if (e instanceof GenerationEvent.Token t) {
                text.append(t.text());
            }
        }
        text.append(finished.trailingText());
        List<ChatOutputParser.Piece> all = new ArrayList<>(pieces(text.toString()));
        if (parser != null) {
            all.addAll(parser.finish());
        }
        List<ObjectNode> blocks = new ArrayList<>();
        List<ObjectNode> toolBlocks = new ArrayList<>();
        Kind last = null;
        boolean calls = false;
        for (ChatOutputParser.Piece p : all) {
            Kind kind = kind(p);
            switch (p) {
                case ChatOutputParser.CallStart c -> {
                    ObjectNode b = Wire.MAPPER.createObjectNode().put("type", "tool_use").put("id", toolUseId(c.id()))
                            .put("name", c.name());
                    blocks.add(b);
                    toolBlocks.add(b);
                    calls = true;
                }
                case ChatOutputParser.CallArguments a -> {
                }
                case ChatOutputParser.Content c -> {
                    if (kind == last) {
                        ObjectNode b = blocks.getLast();
                        b.put("text", b.get("text").asString() + c.text());
                    } else if (!c.text().isEmpty()) {
                        blocks.add(Wire.MAPPER.createObjectNode().put("type", "text").put("text", c.text()));
                    } else {
                        continue;
                    }
                }
                case ChatOutputParser.Reasoning r -> {
                    if (kind == last) {
                        ObjectNode b = blocks.getLast();
                        b.put("thinking", b.get("thinking").asString() + r.text());
                    } else {
                        blocks.add(Wire.MAPPER.createObjectNode().put("type", "thinking").put("thinking", r.text())
                                .put("signature", ""));
                    }
                }
            }
            last = kind;
        }
        if (parser != null) {
            List<io.tqserve.toolcall.ToolCall> done = parser.calls();
            for (int i = 0; i < toolBlocks.size() && i < done.size(); i++) {
                toolBlocks.get(i).set("input", input(done.get(i).arguments()));
            }
        }
        ObjectNode message = message(blocks, stopReason(finished, calls), stopSequence(finished, calls));
        message.set("usage", usage(finished.promptTokens(), finished.cachedTokens(), finished.completionTokens()));
        return Wire.json(message);
    }

    private ObjectNode message(List<ObjectNode> content, String stopReason, String stopSequence) {
        ObjectNode m = Wire.MAPPER.createObjectNode();
        m.put("id", id).put("type", "message").put("role", "assistant").put("model", model);
        ArrayNode c = m.putArray("content");
        content.forEach(c::add);
        m.put("stop_reason", stopReason).put("stop_sequence", stopSequence);
        return m;
    }

    private static ObjectNode usage(int prompt, int cached, int output) {
        ObjectNode u = Wire.MAPPER.createObjectNode();
        u.put("input_tokens", prompt - cached).put("cache_creation_input_tokens", 0)
                .put("cache_read_input_tokens", cached).put("output_tokens", output);
        return u;
    }

    private static String stopReason(GenerationEvent.Finished f, boolean calls) {
        if (calls) {
            return "tool_use";
        }
        if (f.reason() == FinishReason.LENGTH) {
            return "max_tokens";
        }
        return f.stopSequence() != null ? "stop_sequence" : "end_turn";
    }

    private static String stopSequence(GenerationEvent.Finished f, boolean calls) {
        return calls ? null : f.stopSequence();
    }

    private List<ChatOutputParser.Piece> pieces(String text) {
        return WireOutput.pieces(parser, text);
    }

    private static Kind kind(ChatOutputParser.Piece p) {
        return switch (p) {
            case ChatOutputParser.Reasoning r -> Kind.THINKING;
            case ChatOutputParser.Content c -> Kind.TEXT;
            case ChatOutputParser.CallStart c -> Kind.TOOL;
            case ChatOutputParser.CallArguments a -> Kind.TOOL;
        };
    }

    private void pieces(List<ChatOutputParser.Piece> pieces, List<String> out) {
        for (ChatOutputParser.Piece p : pieces) {
            switch (p) {
                case ChatOutputParser.Reasoning r -> {
                    openBlock(Kind.THINKING, Wire.MAPPER.createObjectNode().put("type", "thinking")
                            .put("thinking", "").put("signature", ""), out);
                    out.add(delta(Wire.MAPPER.createObjectNode().put("type", "thinking_delta")
                            .put("thinking", r.text())));
                }
                case ChatOutputParser.Content c -> {
                    if (c.text().isEmpty()) {
                        continue;
                    }
                    openBlock(Kind.TEXT, Wire.MAPPER.createObjectNode().put("type", "text").put("text", ""), out);
                    out.add(delta(Wire.MAPPER.createObjectNode().put("type", "text_delta").put("text", c.text())));
                }
                case ChatOutputParser.CallStart c -> {
                    close(out);
                    sawCalls = true;
                    open = Kind.TOOL;
                    index++;
                    ObjectNode block = Wire.MAPPER.createObjectNode().put("type", "tool_use")
                            .put("id", toolUseId(c.id())).put("name", c.name());
                    block.set("input", Wire.MAPPER.createObjectNode());
                    out.add(frame("content_block_start", node("content_block_start").put("index", index)
                            .set("content_block", block)));
                }
                case ChatOutputParser.CallArguments a -> out.add(delta(Wire.MAPPER.createObjectNode()
                        .put("type", "input_json_delta").put("partial_json", a.fragment())));
            }
        }
    }

    private void openBlock(Kind kind, ObjectNode block, List<String> out) {
        if (open == kind) {
            return;
        }
        close(out);
        open = kind;
        index++;
        out.add(frame("content_block_start", node("content_block_start").put("index", index)
                .set("content_block", block)));
    }

    private void close(List<String> out) {
        if (open != null) {
            out.add(frame("content_block_stop", node("content_block_stop").put("index", index)));
            open = null;
        }
    }

    private String delta(ObjectNode delta) {
        return frame("content_block_delta", node("content_block_delta").put("index", index).set("delta", delta));
    }

    /** Anthropic's tool-use ids begin with toolu_; the chat path's call ids with call_. */
    static String toolUseId(String callId) {
        return "toolu_" + (callId.startsWith("call_") ? callId.substring(5) : callId);
    }

    private static JsonNode input(String arguments) {
        try {
            JsonNode n = Wire.MAPPER.readTree(arguments);
            return n.isObject() ? n : Wire.MAPPER.createObjectNode();
        } catch (JacksonException e) {
            return Wire.MAPPER.createObjectNode();
        }
    }

    private static ObjectNode node(String type) {
        return Wire.MAPPER.createObjectNode().put("type", type);
    }

    static String frame(String event, JsonNode data) {
        return "event: " + event + "\ndata: " + Wire.json(data) + "\n\n";
    }
}
