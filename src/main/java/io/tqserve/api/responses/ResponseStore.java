package io.tqserve.api.responses;

import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import tools.jackson.databind.node.ArrayNode;

/**
 * The responses kept for {@code previous_response_id} and {@code GET /v1/responses/{id}}: in memory, per tenant
 * (an API key; all requests without keys are one tenant), the most recent first kept. Each tenant holds at most
 * {@code maxCountPerKey} responses and {@code maxBytesPerKey} bytes (their JSON text: the response and the
 * conversation it continues); the oldest go first, and a response older than {@code ttl} is gone. A tenant never
 * sees another's responses: an id stored by one is unknown to the others. Thread-safe.
 */
public final class ResponseStore {
    /**
     * One stored response.
     *
     * @param response     the response object's JSON text, as GET answers it
     * @param conversation the chat messages a request continuing it starts from
     * @param bytes        what it is charged
     * @param created      when it was stored (clock millis)
     */
    public record Stored(String response, ArrayNode conversation, long bytes, long created) {
    }

    /**
     * @param maxCountPerKey responses one tenant keeps (0 = none are kept)
     * @param maxBytesPerKey bytes one tenant's responses take
     * @param ttl            how long a response is kept
     */
    public record Limits(int maxCountPerKey, long maxBytesPerKey, Duration ttl) {
    }

    private final Limits limits;
    private final Clock clock;
    private final Map<String, LinkedHashMap<String, Stored>> tenants = new HashMap<>();
    private final Map<String, Long> bytes = new HashMap<>();

    public ResponseStore(Limits limits) {
        this(limits, Clock.systemUTC());
    }

    ResponseStore(Limits limits, Clock clock) {
        this.limits = limits;
        this.clock = clock;
    }

    /** Keeps a response (or nothing, when it alone is larger than a tenant may keep). */
    public synchronized void put(String tenant, String id, String response, ArrayNode conversation) {
        long size = 2L * (response.length() + conversation.toString().length());
        if (limits.maxCountPerKey() == 0 || size > limits.maxBytesPerKey()) {
            return;
        }
        LinkedHashMap<String, Stored> map = tenants.computeIfAbsent(tenant, t -> new LinkedHashMap<>());
        remove(tenant, map, id);
        map.put(id, new Stored(response, conversation, size, clock.millis()));
        bytes.merge(tenant, size, Long::sum);
        expire(tenant, map);
        Iterator<Map.Entry<String, Stored>> it = map.entrySet().iterator();
        while ((map.size() > limits.maxCountPerKey() || bytes.get(tenant) > limits.maxBytesPerKey()) && it.hasNext()) {
            Stored s = it.next().getValue();
            bytes.merge(tenant, -s.bytes(), Long::sum);
            it.remove();
        }
    }

    /** The tenant's response with this id, if kept and not expired. */
    public synchronized Optional<Stored> get(String tenant, String id) {
        LinkedHashMap<String, Stored> map = tenants.get(tenant);
        if (map == null) {
            return Optional.empty();
        }
        expire(tenant, map);
        return Optional.ofNullable(map.get(id));
    }

    /** Deletes the tenant's response with this id; false when there was none. */
    public synchronized boolean delete(String tenant, String id) {
        LinkedHashMap<String, Stored> map = tenants.get(tenant);
        if (map == null) {
            return false;
        }
        expire(tenant, map);
        return remove(tenant, map, id);
    }

    /** Responses kept for a tenant (tests, metrics). */
    public synchronized int size(String tenant) {
        LinkedHashMap<String, Stored> map = tenants.get(tenant);
        return map == null ? 0 : map.size();
    }

    private boolean remove(String tenant, LinkedHashMap<String, Stored> map, String id) {
        Stored old = map.remove(id);
        if (old != null) {
            bytes.merge(tenant, -old.bytes(), Long::sum);
        }
        return old != null;
    }

    private void expire(String tenant, LinkedHashMap<String, Stored> map) {
        long oldest = clock.millis() - limits.ttl().toMillis();
        Iterator<Map.Entry<String, Stored>> it = map.entrySet().iterator();
        while (it.hasNext()) {
            Stored s = it.next().getValue();
            if (s.created() >= oldest) {
                break; // insertion order is age order
            }
            bytes.merge(tenant, -s.bytes(), Long::sum);
            it.remove();
        }
    }
}
