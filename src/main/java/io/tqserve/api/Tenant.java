package io.tqserve.api;

import io.tqserve.kv.store.PromptCache;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import org.springframework.web.server.ServerWebExchange;
import tools.jackson.databind.JsonNode;

/**
 * Which tenant a request belongs to, for keeping tenants' prompt-cache entries and KV snapshots apart. With API
 * keys, a tenant is an API key: its id is derived from the SHA-256 of the key ({@link ApiKeyFilter} records it
 * once the key matched), never the key itself. Without keys every request is the one shared tenant ("").
 * A request may narrow its prompt-cache namespace further with {@code cache_salt} (as in vLLM): only requests
 * with the same key and the same salt share cached prefixes.
 */
final class Tenant {
    static final String ATTRIBUTE = Tenant.class.getName();
    static final int MAX_SALT_CHARS = 1024;

    private Tenant() {
    }

    /** Records the tenant of a request whose key (with this SHA-256) matched. */
    static void set(ServerWebExchange exchange, byte[] keyDigest) {
        exchange.getAttributes().put(ATTRIBUTE, derive("tqserve tenant", HexFormat.of().formatHex(keyDigest)));
    }

    /** The request's tenant id: 32 hex characters, or "" without API keys. */
    static String of(ServerWebExchange exchange) {
        String t = exchange.getAttribute(ATTRIBUTE);
        return t == null ? PromptCache.SHARED : t;
    }

    /**
     * The prompt-cache namespace of a request: the shared one without a key and without {@code cache_salt},
     * else derived from both. A {@code cache_salt} that is not a string of 1 to {@value #MAX_SALT_CHARS}
     * characters is a 400.
     */
    static String cacheNamespace(String tenant, JsonNode body) {
        JsonNode salt = body == null ? null : body.get("cache_salt");
        if (salt == null || salt.isNull()) {
            return tenant;
        }
        if (!salt.isString() || salt.asString().isEmpty() || salt.asString().length() > MAX_SALT_CHARS) {
            throw ApiException.invalid("cache_salt", "cache_salt must be a string of 1 to " + MAX_SALT_CHARS
                    + " characters");
        }
        InputLimits.text(salt.asString(), "cache_salt", MAX_SALT_CHARS);
        return derive("tqserve prompt cache", tenant + "\u0000" + salt.asString());
    }

    private static String derive(String purpose, String value) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            md.update(purpose.getBytes(StandardCharsets.UTF_8));
            md.update((byte) 0);
            return HexFormat.of().formatHex(md.digest(value.getBytes(StandardCharsets.UTF_8))).substring(0, 32);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }
}
