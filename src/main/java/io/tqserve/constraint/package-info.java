/**
 * Constrained decoding: a JSON schema (or free JSON, or a tool-call format) becomes a {@link
 * io.tqserve.constraint.Grammar} over bytes, run by a parser whose state is a small set of configurations on
 * persistent stacks; per step, the vocabulary's tokens that keep the output inside the grammar (and within reach of
 * a complete document in the remaining token budget) form the mask applied to the logits before sampling. Knows
 * nothing of the model, the lanes or the API.
 *
 * <p>Why hand-written: no JVM library computes token masks for a grammar lazily. The systems that do it well are
 * native: LLGuidance (Rust: lexer states derived lazily from regex derivatives, an Earley parser over the grammar)
 * and XGrammar (C++: a pushdown automaton with an adaptive token-mask cache). The JVM's regex and automaton
 * libraries build whole automata up front, which for a schema means one deterministic automaton whose size
 * multiplies with every counter ({@code maxLength}, {@code maxItems}) and optional member: seconds to minutes of
 * CPU and gigabytes for small schemas. Here only the small regular pieces are automata: the JSON string and
 * whitespace lexemes are a dozen hand-written states; numbers, integer ranges and formats are built with
 * {@code dk.brics.automaton} (bounded in states). Structure, counts and recursion live in the parser's state.
 * Token masks walk the vocabulary's trie against the parser state; a wide lexeme's mask is cached per state, and
 * states that take every plain string character start from a per-vocabulary slice of the tokens made of such
 * characters and walk only the rest of the trie ({@link io.tqserve.constraint.StringSlice}, after LLGuidance's
 * slicer).
 *
 * <p>Every compile and every mask runs within {@link io.tqserve.constraint.ConstraintLimits} and answers
 * {@link io.tqserve.constraint.ConstraintBudgetException} (an {@link
 * io.tqserve.constraint.UnsupportedSchemaException}) naming the schema keyword that exceeded it.
 */
package io.tqserve.constraint;
