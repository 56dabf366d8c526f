package io.tqserve.routing;

import io.tqserve.engine.Lane;
import io.tqserve.kv.KvLayout;
import io.tqserve.kv.KvScheme;

/**
 * A configured lane, known from the configuration and the model's config.json before any weight is loaded.
 *
 * @param kind        which lane
 * @param scheme      its KV scheme
 * @param layout      exact KV bytes per token of that scheme on the served model
 * @param budgetBytes its KV byte budget
 */
public record LanePlan(Lane.Kind kind, KvScheme scheme, KvLayout layout, long budgetBytes) {
}
