package io.tqserve.api;

import tools.jackson.databind.JsonNode;

/**
 * The per-request switch of prompt-lookup speculation ({@code "tqserve_speculative": false} opts out). Speculation
 * never changes the output, only the forward passes it takes, so the switch exists for measurements and for
 * clients that want each step's latency flat.
 */
final class Speculation {
    static final String PARAM = "tqserve_speculative";

    private Speculation() {
    }

    /** Whether the request allows speculation: absent or null is yes; anything but a boolean is a 400. */
    static boolean allowed(JsonNode body) {
        JsonNode v = body == null ? null : body.get(PARAM);
        if (v == null || v.isNull()) {
            return true;
        }
        if (!v.isBoolean()) {
            throw ApiException.invalid(PARAM, PARAM + " must be true or false");
        }
        return v.asBoolean();
    }
}
