package io.tqserve.api;

import io.tqserve.api.openai.Wire;
import io.tqserve.engine.FinishReason;
import io.tqserve.engine.GenerationEvent;
import io.tqserve.engine.GenerationRequest;
import io.tqserve.engine.Lane;
import io.tqserve.engine.LaneRejectedException;
import io.tqserve.engine.SamplingParams;
import io.tqserve.kv.KvScheme;
import io.tqserve.kv.store.KvSnapshot;
import io.tqserve.kv.store.SnapshotException;
import io.tqserve.kv.store.SnapshotStore;
import io.tqserve.model.Model;
import io.tqserve.routing.NoLaneFitsException;
import io.tqserve.routing.RouteDecision;
import io.tqserve.routing.RouteRequest;
import io.tqserve.routing.ServingRuntime;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.stereotype.Component;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import tools.jackson.databind.JsonNode;

/**
 * The KV snapshot API: {@code POST /v1/kv/snapshots} prefills a prompt (or chat messages) on a lane and stores
 * the cache with its token ids and next-token logits; {@code GET} lists, {@code DELETE /{id}} removes; a
 * completion request with {@code "tqserve_kv_snapshot": id} continues from one (see {@link #resolve}). Snapshot
 * ids are opaque random hex, checked before they touch a path. Needs {@code tqserve.store.dir}.
 */
@Component
public final class SnapshotHandler {
    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(SnapshotHandler.class);
    private final ServingRuntime runtime;
    private final ApiSettings settings;
    private final SnapshotSettings snapshots;
    private final Scheduler scheduler;
    private final AtomicReference<SnapshotStore> store = new AtomicReference<>();

    public SnapshotHandler(ServingRuntime runtime, ApiSettings settings, SnapshotSettings snapshots,
            ApiScheduler scheduler) {
        this.runtime = runtime;
        this.settings = settings;
        this.snapshots = snapshots;
        this.scheduler = scheduler.scheduler();
    }

    private SnapshotStore store(Model model) {
        if (snapshots.dir() == null) {
            throw new ApiException(HttpStatus.NOT_FOUND, "invalid_request_error", null, "snapshots_disabled",
                    "KV snapshots are off; set tqserve.store.dir to a directory to enable them", null);
        }
        return store.updateAndGet(s -> s != null ? s
                : new SnapshotStore(snapshots.dir(), model.fingerprint(), model.tokenizerHash(), snapshots.quota()));
    }

    public Mono<ServerResponse> create(ServerRequest request) {
        String laneHeader = request.headers().firstHeader(GenerationHandler.LANE_HEADER);
        String owner = Tenant.of(request.exchange());
        return Mono.defer(() -> {
            Json.requireJson(request.headers().header(org.springframework.http.HttpHeaders.CONTENT_TYPE));
            ServingRuntime.Loaded loaded = Readiness.require(runtime, settings);
            SnapshotStore st = store(loaded.model());
            return Json.body(request).map(Json::read)
                    .publishOn(scheduler)
                    .flatMap(body -> {
                        if (!body.isObject()) {
                            throw ApiException.invalid(null, "the request body must be a JSON object");
                        }
                        int[] ids = TokenizeHandler.tokenize(body, loaded.model(), settings);
                        if (ids.length == 0) {
                            throw ApiException.invalid("prompt", "the prompt has no tokens");
                        }
                        if (ids.length >= loaded.model().config().maxPositions()) {
                            throw ApiException.invalid("prompt", "context_length_exceeded", "the prompt has "
                                    + ids.length + " tokens; the model context is "
                                    + loaded.model().config().maxPositions());
                        }
                        Optional<Lane.Kind> override = laneOverride(body, laneHeader);
                        try {
                            st.checkRoom(owner); // before the prefill: a full quota costs no compute
                        } catch (SnapshotStore.QuotaExceededException e) {
                            throw quotaExceeded(e);
                        }
                        return capture(loaded, st, owner, ids, override);
                    });
        });
    }

    private static Optional<Lane.Kind> laneOverride(JsonNode body, String header) {
        String v = body.path("tqserve_lane").isString() ? body.get("tqserve_lane").asString() : header;
        if (v == null || v.isBlank() || v.equalsIgnoreCase("auto")) {
            return Optional.empty();
        }
        return switch (v.trim().toLowerCase(java.util.Locale.ROOT)) {
            case "turbo" -> Optional.of(Lane.Kind.TURBO);
            case "batched" -> Optional.of(Lane.Kind.BATCHED);
            default -> throw ApiException.invalid("tqserve_lane", "tqserve_lane must be auto, turbo or batched");
        };
    }

    private Mono<ServerResponse> capture(ServingRuntime.Loaded loaded, SnapshotStore st, String owner, int[] ids,
            Optional<Lane.Kind> override) {
        RouteDecision decision;
        try {
            decision = loaded.routing().route(new RouteRequest(ids.length + 1, override));
        } catch (NoLaneFitsException e) {
            throw ApiException.invalid("prompt", "kv_budget_exceeded", e.getMessage());
        }
        AtomicReference<KvSnapshot> captured = new AtomicReference<>();
        GenerationRequest gen = new GenerationRequest(ids, SamplingParams.greedy(1), null, captured::set);
        Lane lane = decision.lane();
        try {
            return lane.submit(gen).publishOn(scheduler)
                    .filter(e -> e instanceof GenerationEvent.Finished || e instanceof GenerationEvent.Failed)
                    .next()
                    .map(end -> {
                        if (end instanceof GenerationEvent.Failed f) {
                            throw new ApiException(HttpStatus.INTERNAL_SERVER_ERROR, "server_error", null, f.type(),
                                    f.message(), null);
                        }
                        if (((GenerationEvent.Finished) end).reason() == FinishReason.CANCELLED || captured.get() == null) {
                            throw new ApiException(HttpStatus.SERVICE_UNAVAILABLE, "service_unavailable", null,
                                    "cancelled", "the snapshot was not taken", settings.retryAfter());
                        }
                        try {
                            SnapshotStore.Info info = st.save(owner, captured.get());
                            return body(info, lane.kind());
                        } catch (SnapshotStore.QuotaExceededException e) {
                            throw quotaExceeded(e);
                        } catch (SnapshotException e) {
                            log.warn("could not write a KV snapshot: {}", e.getMessage());
                            throw new ApiException(HttpStatus.INTERNAL_SERVER_ERROR, "server_error", null,
                                    "snapshot_write_failed", "the snapshot could not be written", null);
                        }
                    })
                    .flatMap(SnapshotHandler::json);
        } catch (LaneRejectedException e) {
            throw settings.queueFull(e.getMessage());
        }
    }

    private static Map<String, Object> body(SnapshotStore.Info info, Lane.Kind lane) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("id", info.id());
        out.put("object", "kv.snapshot");
        out.put("tokens", info.tokens());
        out.put("bytes", info.bytes());
        out.put("lane", lane == null ? laneOf(info.scheme()) : lane.wireName());
        out.put("scheme", info.scheme().id());
        return out;
    }

    private static String laneOf(KvScheme scheme) {
        return scheme instanceof KvScheme.Bf16 ? Lane.Kind.BATCHED.wireName() : Lane.Kind.TURBO.wireName();
    }

    public Mono<ServerResponse> list(ServerRequest request) {
        return Mono.defer(() -> {
            SnapshotStore st = store(Readiness.require(runtime, settings).model());
            String owner = Tenant.of(request.exchange());
            return Mono.fromCallable(() -> {
                List<Map<String, Object>> data = st.list(owner).stream().map(i -> body(i, null)).toList();
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("object", "list");
                out.put("data", data);
                return out;
            }).subscribeOn(scheduler).flatMap(SnapshotHandler::json);
        });
    }

    public Mono<ServerResponse> delete(ServerRequest request) {
        String id = request.pathVariable("id");
        return Mono.defer(() -> {
            SnapshotStore st = store(Readiness.require(runtime, settings).model());
            String owner = Tenant.of(request.exchange());
            return Mono.fromCallable(() -> {
                if (!st.delete(owner, id)) {
                    throw notFound(id);
                }
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("id", id);
                out.put("object", "kv.snapshot.deleted");
                out.put("deleted", true);
                return out;
            }).subscribeOn(scheduler).flatMap(SnapshotHandler::json);
        });
    }

    /**
     * The snapshot a completion continues from, validated against the served model; a missing or damaged one is
     * a 4xx naming why. Blocking I/O: call off the event loop.
     */
    KvSnapshot resolve(String id, String owner, Model model) {
        SnapshotStore st = store(model);
        try {
            return st.load(owner, id).orElseThrow(() -> notFound(id));
        } catch (SnapshotException e) {
            // the store's messages name files: the answer says only what is wrong with the snapshot
            log.warn("KV snapshot {} cannot be used: {}", id, e.getMessage());
            throw new ApiException(HttpStatus.CONFLICT, "invalid_request_error", "tqserve_kv_snapshot",
                    "snapshot_" + e.reason().name().toLowerCase(java.util.Locale.ROOT), unusable(e.reason()), null);
        }
    }

    private static String unusable(SnapshotException.Reason reason) {
        return "the KV snapshot cannot be used: " + switch (reason) {
            case NOT_A_SNAPSHOT -> "its file is not a KV snapshot";
            case UNSUPPORTED_VERSION -> "it was written in a format version this server does not read";
            case TRUNCATED -> "its file is truncated";
            case CHECKSUM -> "its file is damaged (checksum mismatch)";
            case WRONG_SCHEME -> "it holds another KV scheme or shape";
            case WRONG_MODEL -> "it was written for other model weights";
            case WRONG_TOKENIZER -> "it was written with another tokenizer";
            case IO -> "its file cannot be read";
        };
    }

    private static ApiException quotaExceeded(SnapshotStore.QuotaExceededException e) {
        return new ApiException(HttpStatus.TOO_MANY_REQUESTS, "insufficient_quota", null, "snapshot_quota_exceeded",
                e.getMessage() + " (tqserve.store.snapshots.*)", null);
    }

    private static ApiException notFound(String id) {
        return new ApiException(HttpStatus.NOT_FOUND, "invalid_request_error", "tqserve_kv_snapshot",
                "snapshot_not_found", "no KV snapshot with id '" + (SnapshotStore.validId(id) ? id : "(invalid)")
                        + "'", null);
    }

    private static Mono<ServerResponse> json(Object body) {
        return ServerResponse.ok().contentType(MediaType.APPLICATION_JSON)
                .bodyValue(Wire.json(body).getBytes(StandardCharsets.UTF_8));
    }
}
