/**
 * OpenAI wire records, serialized by {@link io.tqserve.api.openai.Wire#MAPPER} (snake_case names, component
 * order as declared, nulls written unless a component says otherwise — OpenAI sends {@code "finish_reason": null}
 * and {@code "logprobs": null} explicitly).
 */
package io.tqserve.api.openai;
