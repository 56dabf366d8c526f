/**
 * A model's chat format ({@link io.tqserve.toolcall.ChatFormat}: rendering a
 * {@link io.tqserve.toolcall.Conversation} to prompt tokens, with special-token text from clients kept as text),
 * and tool calls and reasoning in generated chat text: the tool-call formats of chat templates (Hermes, Llama 3.1
 * JSON, Mistral {@code name[ARGS]} and Mistral JSON array), their parsers (whole text and streamed), the grammars of
 * forced and {@code auto} calls (special-token markers as grammar slots), and the split of a reasoning model's
 * {@code <think>} block from its answer. Plain Java, Jackson,
 * the template engine and the tokenizer; no Spring.
 */
package io.tqserve.toolcall;
