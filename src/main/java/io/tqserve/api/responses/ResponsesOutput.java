package io.tqserve.api.responses;

import io.tqserve.api.ApiException;
import io.tqserve.api.WireOutput;
import io.tqserve.api.openai.Wire;
import io.tqserve.engine.FinishReason;
import io.tqserve.engine.GenerationEvent;
import io.tqserve.toolcall.ChatOutputParser;
import io.tqserve.toolcall.ToolCall;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.BiConsumer;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * The answer of a Responses request as OpenAI's reference documents it. The response object: {@code output}
 * items ({@code reasoning} with {@code reasoning_text} content for a template's {@code <think>} block,
 * {@code message} with one {@code output_text} part, {@code function_call}s), {@code status} {@code completed} or
 * {@code incomplete} ({@code incomplete_details.reason: max_output_tokens}), {@code usage} with
 * {@code input_tokens_details.cached_tokens} and {@code output_tokens_details.reasoning_tokens}, and the request's
 * settings echoed. Streamed: typed events ({@code event: <type>} and {@code data: <json>}, every event with its
 * {@code sequence_number} from 0): {@code response.created}, {@code response.in_progress}; per item
 * {@code response.output_item.added}, for a message {@code response.content_part.added},
 * {@code response.output_text.delta}s, {@code response.output_text.done}, {@code response.content_part.done}; for a
 * call {@code response.function_call_arguments.delta}s as the arguments are generated and {@code .done}; for reasoning
 * {@code response.reasoning_text.delta}s and {@code .done}; then {@code response.output_item.done}; last
 * {@code response.completed} or {@code response.incomplete}, or {@code response.failed} after a failure.
 */
public final class ResponsesOutput implements WireOutput {
    private enum Kind { REASONING, MESSAGE, CALL }

    /** One output item as it is built. */
    private static final class Item {
        final Kind kind;
        final String id;
        final int index;
        final StringBuilder text = new StringBuilder();
        ToolCall call;

        Item(Kind kind, String id, int index) {
            this.kind = kind;
            this.id = id;
            this.index = index;
        }
    }

    private final String id;
    private final long created;
    private final String model;
    private final JsonNode request;
    private final ChatOutputParser parser;
    private final BiConsumer<String, ObjectNode> onCompleted;
    private final List<Item> items = new ArrayList<>();
    private Item open;
    private int sequence;
    private int reasoningTokens;
    private boolean contentSeen;

    /**
     * @param id          the response id ({@code resp_...})
     * @param model       the model named in the answer
     * @param request     the Responses request (its settings are echoed in the response object)
     * @param parser      the split into reasoning, text and tool calls, or null when the text is the answer as is
     * @param onCompleted told the final response object's JSON text and the output as a chat assistant message
     *                    when the response completed or is incomplete (the store); not after a failure
     */
    public ResponsesOutput(String id, String model, JsonNode request, ChatOutputParser parser,
            BiConsumer<String, ObjectNode> onCompleted) {
        this.id = id;
        this.created = System.currentTimeMillis() / 1000;
        this.model = model;
        this.request = request;
        this.parser = parser;
        this.onCompleted = onCompleted;
    }

    @Override
    public List<String> start() {
        ObjectNode r = response("in_progress", null);
        return List.of(event("response.created", e -> e.set("response", r)),
                event("response.in_progress", e -> e.set("response", r)));
    }

    @Override
    public String keepAlive() {
        return ": keep-alive\n\n";
    }

    @Override
    public List<String> on(GenerationEvent event) {
        List<String> out = new ArrayList<>();
        switch (event) {
            case GenerationEvent.Started s -> {
            }
            case GenerationEvent.Token t -> {
                List<ChatOutputParser.Piece> pieces = pieces(t.text());
                pieces(pieces, out);
                boolean reasoningOnly = !pieces.isEmpty()
                        && pieces.stream().allMatch(p -> p instanceof ChatOutputParser.Reasoning);
                if (!contentSeen && (reasoningOnly || pieces.isEmpty() && open != null && open.kind == Kind.REASONING)) {
                    reasoningTokens++;
                }
                contentSeen |= pieces.stream().anyMatch(p -> !(p instanceof ChatOutputParser.Reasoning));
            }
            case GenerationEvent.Finished f -> {
                pieces(pieces(f.trailingText()), out);
                if (parser != null) {
                    pieces(parser.finish(), out);
                }
                close(out, f.reason() == FinishReason.LENGTH);
                boolean incomplete = f.reason() == FinishReason.LENGTH;
                ObjectNode r = response(incomplete ? "incomplete" : "completed", f);
                onCompleted.accept(Wire.json(r), assistantMessage());
                out.add(event(incomplete ? "response.incomplete" : "response.completed", e -> e.set("response", r)));
            }
            case GenerationEvent.Failed f -> {
            }
        }
        return out;
    }

    @Override
    public List<String> failure(ApiException error) {
        ObjectNode r = response("failed", null);
        r.putObject("error").put("code", "server_error").put("message", error.getMessage());
        return List.of(event("response.failed", e -> e.set("response", r)));
    }

    @Override
    public String body(List<GenerationEvent> events) {
        GenerationEvent.Finished finished = WireOutput.finished(events);
        for (GenerationEvent e : events) {
            on(e);
        }
        return Wire.json(response(finished.reason() == FinishReason.LENGTH ? "incomplete" : "completed", finished));
    }

    /** The output as the chat message a continuing request starts from (text and tool calls; no reasoning). */
    private ObjectNode assistantMessage() {
        ObjectNode m = Wire.MAPPER.createObjectNode().put("role", "assistant");
        StringBuilder text = new StringBuilder();
        ArrayNode calls = Wire.MAPPER.createArrayNode();
        for (Item item : items) {
            if (item.kind == Kind.MESSAGE) {
                text.append(item.text);
            } else if (item.kind == Kind.CALL) {
                ObjectNode c = calls.addObject().put("id", item.call.id()).put("type", "function");
                c.putObject("function").put("name", item.call.name()).put("arguments", item.text.toString());
            }
        }
        if (calls.isEmpty()) {
            m.put("content", text.toString());
        } else {
            if (text.isEmpty()) {
                m.putNull("content");
            } else {
                m.put("content", text.toString());
            }
            m.set("tool_calls", calls);
        }
        return m;
    }

    private List<ChatOutputParser.Piece> pieces(String text) {
        return WireOutput.pieces(parser, text);
    }

    private void pieces(List<ChatOutputParser.Piece> pieces, List<String> out) {
        for (ChatOutputParser.Piece p : pieces) {
            switch (p) {
                case ChatOutputParser.Reasoning r -> {
                    Item item = open(Kind.REASONING, "rs_", out);
                    item.text.append(r.text());
                    out.add(event("response.reasoning_text.delta", e -> e.put("item_id", item.id)
                            .put("output_index", item.index).put("content_index", 0).put("delta", r.text())));
                }
                case ChatOutputParser.Content c -> {
                    if (c.text().isEmpty()) {
                        continue;
                    }
                    Item item = open(Kind.MESSAGE, "msg_", out);
                    item.text.append(c.text());
                    out.add(event("response.output_text.delta", e -> e.put("item_id", item.id)
                            .put("output_index", item.index).put("content_index", 0).put("delta", c.text())
                            .set("logprobs", Wire.MAPPER.createArrayNode())));
                }
                case ChatOutputParser.CallStart c -> {
                    close(out, false);
                    Item item = new Item(Kind.CALL, "fc_" + hex(), items.size());
                    item.call = new ToolCall(c.id(), c.name(), "");
                    items.add(item);
                    open = item;
                    ObjectNode added = item(item, "in_progress");
                    out.add(event("response.output_item.added", e -> e.put("output_index", item.index)
                            .set("item", added)));
                }
                case ChatOutputParser.CallArguments a -> {
                    Item item = open; // the call in progress: its arguments grow as they are generated
                    item.text.append(a.fragment());
                    out.add(event("response.function_call_arguments.delta", e -> e.put("item_id", item.id)
                            .put("output_index", item.index).put("delta", a.fragment())));
                }
            }
        }
    }

    private Item open(Kind kind, String prefix, List<String> out) {
        if (open != null && open.kind == kind) {
            return open;
        }
        close(out, false);
        Item item = new Item(kind, prefix + hex(), items.size());
        items.add(item);
        open = item;
        ObjectNode added = item(item, "in_progress");
        if (kind == Kind.MESSAGE) {
            added.putArray("content");
        }
        out.add(event("response.output_item.added", e -> e.put("output_index", item.index).set("item", added)));
        if (kind == Kind.MESSAGE) {
            out.add(event("response.content_part.added", e -> e.put("item_id", item.id)
                    .put("output_index", item.index).put("content_index", 0).set("part", textPart(""))));
        }
        return item;
    }

    private void close(List<String> out, boolean incomplete) {
        Item item = open;
        if (item == null) {
            return;
        }
        open = null;
        switch (item.kind) {
            case REASONING -> out.add(event("response.reasoning_text.done", e -> e.put("item_id", item.id)
                    .put("output_index", item.index).put("content_index", 0).put("text", item.text.toString())));
            case MESSAGE -> {
                out.add(event("response.output_text.done", e -> e.put("item_id", item.id)
                        .put("output_index", item.index).put("content_index", 0).put("text", item.text.toString())
                        .set("logprobs", Wire.MAPPER.createArrayNode())));
                out.add(event("response.content_part.done", e -> e.put("item_id", item.id)
                        .put("output_index", item.index).put("content_index", 0)
                        .set("part", textPart(item.text.toString()))));
            }
            case CALL -> out.add(event("response.function_call_arguments.done", e -> e.put("item_id", item.id)
                    .put("output_index", item.index).put("name", item.call.name())
                    .put("arguments", item.text.toString())));
        }
        ObjectNode done = item(item, incomplete && item.kind == Kind.MESSAGE ? "incomplete" : "completed");
        out.add(event("response.output_item.done", e -> e.put("output_index", item.index).set("item", done)));
    }

    /** An output item as the response object and the item events show it. */
    private static ObjectNode item(Item item, String status) {
        ObjectNode n = Wire.MAPPER.createObjectNode();
        switch (item.kind) {
            case REASONING -> {
                n.put("id", item.id).put("type", "reasoning");
                n.putArray("summary");
                if (!status.equals("in_progress")) {
                    n.putArray("content").addObject().put("type", "reasoning_text").put("text", item.text.toString());
                }
            }
            case MESSAGE -> {
                n.put("id", item.id).put("type", "message").put("status", status).put("role", "assistant");
                if (!status.equals("in_progress")) {
                    n.putArray("content").add(textPart(item.text.toString()));
                }
            }
            case CALL -> n.put("id", item.id).put("type", "function_call").put("status", status)
                    .put("call_id", item.call.id()).put("name", item.call.name())
                    .put("arguments", item.text.toString());
        }
        return n;
    }

    private static ObjectNode textPart(String text) {
        ObjectNode part = Wire.MAPPER.createObjectNode().put("type", "output_text").put("text", text);
        part.putArray("annotations");
        part.putArray("logprobs");
        return part;
    }

    /** The response object; {@code finished} null while in progress or failed (no usage yet). */
    private ObjectNode response(String status, GenerationEvent.Finished finished) {
        ObjectNode r = Wire.MAPPER.createObjectNode();
        r.put("id", id).put("object", "response").put("created_at", created).put("status", status);
        r.putNull("error");
        if (status.equals("incomplete")) {
            r.putObject("incomplete_details").put("reason", "max_output_tokens");
        } else {
            r.putNull("incomplete_details");
        }
        r.set("instructions", echo("instructions", null));
        r.set("max_output_tokens", echo("max_output_tokens", null));
        r.put("model", model);
        ArrayNode output = r.putArray("output");
        if (finished != null) {
            for (Item item : items) {
                output.add(item(item, status.equals("incomplete") && item.kind == Kind.MESSAGE
                        ? "incomplete" : "completed"));
            }
        }
        r.put("parallel_tool_calls", request.path("parallel_tool_calls").asBoolean(true));
        r.set("previous_response_id", echo("previous_response_id", null));
        ObjectNode reasoning = r.putObject("reasoning");
        reasoning.set("effort", request.path("reasoning").path("effort").isString()
                ? request.get("reasoning").get("effort") : Wire.MAPPER.nullNode());
        reasoning.set("summary", request.path("reasoning").path("summary").isString()
                ? request.get("reasoning").get("summary") : Wire.MAPPER.nullNode());
        r.put("store", request.path("store").asBoolean(true));
        r.set("temperature", echo("temperature", Wire.MAPPER.getNodeFactory().numberNode(1.0)));
        JsonNode text = request.get("text");
        if (text != null && text.isObject() && text.path("format").isObject()) {
            r.set("text", text);
        } else {
            r.putObject("text").putObject("format").put("type", "text");
        }
        r.set("tool_choice", echo("tool_choice", Wire.MAPPER.getNodeFactory().textNode("auto")));
        r.set("tools", echo("tools", Wire.MAPPER.createArrayNode()));
        r.set("top_p", echo("top_p", Wire.MAPPER.getNodeFactory().numberNode(1.0)));
        r.put("truncation", "disabled");
        if (finished == null) {
            r.putNull("usage");
        } else {
            ObjectNode u = r.putObject("usage");
            u.put("input_tokens", finished.promptTokens());
            u.putObject("input_tokens_details").put("cached_tokens", finished.cachedTokens());
            u.put("output_tokens", finished.completionTokens());
            u.putObject("output_tokens_details").put("reasoning_tokens", reasoningTokens);
            u.put("total_tokens", finished.promptTokens() + finished.completionTokens());
        }
        r.set("user", echo("user", null));
        r.set("metadata", echo("metadata", Wire.MAPPER.createObjectNode()));
        return r;
    }

    private JsonNode echo(String field, JsonNode otherwise) {
        JsonNode v = request.get(field);
        return v != null && !v.isNull() ? v : otherwise == null ? Wire.MAPPER.nullNode() : otherwise;
    }

    private String event(String type, java.util.function.Consumer<ObjectNode> fill) {
        ObjectNode e = Wire.MAPPER.createObjectNode().put("type", type).put("sequence_number", sequence++);
        fill.accept(e);
        return "event: " + type + "\ndata: " + Wire.json(e) + "\n\n";
    }

    private static String hex() {
        byte[] b = new byte[12];
        ThreadLocalRandom.current().nextBytes(b);
        return HexFormat.of().formatHex(b);
    }
}
