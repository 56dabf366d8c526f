/**
 * Constrained decoding: a JSON schema (or free JSON, or a tool-call format) becomes a deterministic automaton
 * over bytes; per automaton state, the vocabulary's tokens that keep the output inside the language (and within
 * reach of an accepting state in the remaining token budget) form the mask applied to the logits before
 * sampling. Plain Java over {@code dk.brics.automaton}; knows nothing of the model, the lanes or the API.
 */
package io.tqserve.constraint;
