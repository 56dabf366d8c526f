package io.tqserve.toolcall;

import io.tqserve.constraint.Grammar;
import io.tqserve.model.Tokenizer;
import io.tqserve.template.ChatTemplate;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * Everything a served model's chat template implies, worked out once per model: the compiled template, its
 * tool-call format (an entry of the {@link ToolCallFormat} table: markers, whether they are special tokens, the
 * parse function, the grammar of a call), its reasoning markers and the token that closes reasoning, and the
 * special tokens, which may come only from the template and never from a client's text.
 *
 * <p>Every endpoint renders a {@link Conversation} through {@link #render}, so chat completions and
 * {@code /tokenize} produce the same tokens for the same conversation.
 */
public final class ChatFormat {
    private final ChatTemplate template;
    private final Tokenizer tokenizer;
    private final ToolCallFormat tools;
    private final Reasoning reasoning;

    /**
     * How a template marks reasoning.
     *
     * @param start    the text that opens a reasoning block ({@code <think>})
     * @param end      the text that closes it ({@code </think>})
     * @param endToken the single token of {@code end}, or -1 when it is several tokens
     */
    public record Reasoning(String start, String end, int endToken) {
    }

    /** A rendered conversation. */
    public record Prompt(String text, int[] tokens) {
    }

    private ChatFormat(ChatTemplate template, Tokenizer tokenizer, ToolCallFormat tools, Reasoning reasoning) {
        this.template = template;
        this.tokenizer = tokenizer;
        this.tools = tools;
        this.reasoning = reasoning;
    }

    /** The chat format of a model; {@code template} may be null (the model cannot chat). */
    public static ChatFormat of(ChatTemplate template, Tokenizer tokenizer) {
        if (template == null) {
            return new ChatFormat(null, tokenizer, null, null);
        }
        String source = template.source();
        Reasoning reasoning = reasoningOf(source).map(r -> {
            int[] ids = tokenizer.encode(r.end());
            return new Reasoning(r.start(), r.end(), ids.length == 1 ? ids[0] : -1);
        }).orElse(null);
        return new ChatFormat(template, tokenizer, ToolCallFormat.detect(source).orElse(null), reasoning);
    }

    /** The reasoning markers a template's text uses (end token unknown: -1), or empty. */
    public static Optional<Reasoning> reasoningOf(String templateSource) {
        for (List<String> markers : REASONING_MARKERS) {
            if (templateSource.contains(markers.get(0)) && templateSource.contains(markers.get(1))) {
                return Optional.of(new Reasoning(markers.get(0), markers.get(1), -1));
            }
        }
        return Optional.empty();
    }

    /** Reasoning markers that templates use, start and end; the first pair the template's text holds wins. */
    private static final List<List<String>> REASONING_MARKERS = List.of(List.of("<think>", "</think>"));

    /** The compiled template, or null. */
    public ChatTemplate template() {
        return template;
    }

    /** The template's tool-call format, or empty if it cannot render tools. */
    public Optional<ToolCallFormat> tools() {
        return Optional.ofNullable(tools);
    }

    /**
     * Whether the tool-call format's special-token markers ({@code [TOOL_CALLS]}, {@code [ARGS]}) are special tokens
     * of this model's tokenizer, so that call grammars write them as tokens ({@link
     * io.tqserve.constraint.Grammar#specialToken}); false without such markers.
     */
    public boolean markerTokens() {
        if (tools == null || tools.specialMarkers().isEmpty()) {
            return false;
        }
        for (String m : tools.specialMarkers()) {
            if (tokenizer.specialTokenId(m).isEmpty()) {
                return false;
            }
        }
        return true;
    }

    /**
     * The token bytes a constraint's {@link io.tqserve.constraint.Vocabulary} is built from: {@code tokenBytes}
     * (special tokens null) with the tool-call format's special-token markers given the bytes of their grammar
     * slots ({@link io.tqserve.constraint.Grammar#specialBytes}) when {@link #markerTokens()}, and the ordinary
     * tokens holding the byte 0xFF (byte-fallback pieces that no UTF-8 text contains) dropped, so that only the
     * marker token can write a slot's bytes.
     */
    public byte[][] constraintTokenBytes(byte[][] tokenBytes) {
        byte[][] out = tokenBytes.clone();
        for (int id = 0; id < out.length; id++) {
            byte[] b = out[id];
            if (b != null) {
                for (byte x : b) {
                    if ((x & 0xFF) == Grammar.SPECIAL_LEAD) {
                        out[id] = null;
                        break;
                    }
                }
            }
        }
        if (markerTokens()) {
            List<String> markers = tools.specialMarkers();
            for (int slot = 0; slot < markers.size(); slot++) {
                int id = tokenizer.specialTokenId(markers.get(slot)).getAsInt();
                if (id < out.length) {
                    out[id] = Grammar.specialBytes(slot);
                }
            }
        }
        return out;
    }

    /** The template's reasoning markers, or empty if it does not reason in blocks. */
    public Optional<Reasoning> reasoning() {
        return Optional.ofNullable(reasoning);
    }

    /** The token that closes reasoning (a constraint starts after it), if it is one token. */
    public OptionalInt reasoningEndToken() {
        return reasoning == null || reasoning.endToken() < 0 ? OptionalInt.empty()
                : OptionalInt.of(reasoning.endToken());
    }

    /** Whether a rendered prompt ends inside an open reasoning block (the output starts as reasoning). */
    public boolean opensReasoning(String prompt) {
        return reasoning != null && prompt.lastIndexOf(reasoning.start()) > prompt.lastIndexOf(reasoning.end());
    }

    /**
     * Whether the model reasons first after a rendered prompt: the template reasons and the prompt did not already
     * close the block (as Qwen3's does with {@code enable_thinking} false).
     */
    public boolean reasonsFirst(String prompt) {
        return reasoning != null && (opensReasoning(prompt) || !prompt.stripTrailing().endsWith(reasoning.end()));
    }

    /** The tokens of the marker that ends reasoning (empty without reasoning). */
    public int[] reasoningEndTokens() {
        return reasoning == null ? new int[0] : tokenizer.encode(reasoning.end());
    }

    /**
     * Renders a conversation and tokenizes it. The special-token text in the conversation's strings (contents, tool
     * results, tool-call arguments, tool definitions) is tokenized as ordinary text unless
     * {@code specialTokensInContent}: only the template can write a special token, so no message can forge a turn.
     *
     * @throws io.tqserve.template.TemplateException when the template raises or fails on the conversation
     */
    public Prompt render(Conversation c, boolean addGenerationPrompt, boolean specialTokensInContent) {
        if (specialTokensInContent) {
            String text = template.render(c.messages(), c.tools(), addGenerationPrompt, c.templateKwargs());
            return new Prompt(text, tokenizer.encode(text));
        }
        List<?> messages = (List<?>) mark(c.messages());
        List<?> tools = c.tools() == null ? null : (List<?>) mark(c.tools());
        String marked = template.render(messages, tools, addGenerationPrompt, c.templateKwargs());
        return new Prompt(tokenizer.unmark(marked), tokenizer.encodeMarked(marked));
    }

    /** A copy of a JSON-like value with every string (keys too) marked by the tokenizer. */
    private Object mark(Object v) {
        return switch (v) {
            case String s -> tokenizer.markSpecialText(s);
            case Map<?, ?> m -> {
                Map<Object, Object> out = new LinkedHashMap<>();
                m.forEach((k, x) -> out.put(k instanceof String ks ? tokenizer.markSpecialText(ks) : k,
                        x == null ? null : mark(x)));
                yield out;
            }
            case List<?> l -> {
                List<Object> out = new ArrayList<>(l.size());
                l.forEach(x -> out.add(x == null ? null : mark(x)));
                yield out;
            }
            default -> v;
        };
    }
}
