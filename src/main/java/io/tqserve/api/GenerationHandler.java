package io.tqserve.api;

import io.tqserve.api.openai.ErrorBody;
import io.tqserve.engine.GenerationEvent;
import io.tqserve.engine.GenerationRequest;
import io.tqserve.engine.LaneRejectedException;
import io.tqserve.routing.NoLaneFitsException;
import io.tqserve.routing.RouteDecision;
import io.tqserve.routing.RouteRequest;
import io.tqserve.routing.ServingRuntime;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ReactiveHttpOutputMessage;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.stereotype.Component;
import org.springframework.web.reactive.function.BodyInserter;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import tools.jackson.databind.JsonNode;

/**
 * {@code POST /v1/chat/completions} and {@code POST /v1/completions}: parse and validate on the event loop
 * (cheap), render and tokenize on the API scheduler, route, submit to the lane, then stream SSE frames or
 * collect one JSON body. A stream's events are handed from the lane thread to its connection's event loop, which
 * encodes each token (a few microseconds of JSON) and writes it: the one hand-off per token that writing needs
 * anyway, and every signal of the stream's pipeline on one thread ({@link ResponseLoop} says why that matters).
 * A non-streamed body is assembled on the API scheduler. Cancelling the response (client gone) cancels the lane's
 * Flux, which cancels the sequence and frees its KV memory.
 */
@Component
public final class GenerationHandler {
    public static final String LANE_HEADER = "X-Tqserve-Lane";
    public static final String REASON_HEADER = "X-Tqserve-Route-Reason";
    static final MediaType EVENT_STREAM = new MediaType("text", "event-stream", StandardCharsets.UTF_8);

    private final ServingRuntime runtime;
    private final ApiSettings settings;
    private final Scheduler scheduler;
    private final RequestParser parser;

    private final SnapshotHandler snapshots;
    private final RequestDeadline deadline;
    private final RequestLog requestLog;
    private final ConstraintPool constraintPool;
    private volatile StructuredOutput structured;

    /**
     * Without the server's shutdown drain (requests end only at the request timeout) and with a constraint pool of
     * default settings (tests, tools).
     */
    public GenerationHandler(ServingRuntime runtime, ApiSettings settings, ApiScheduler scheduler,
            SnapshotHandler snapshots) {
        this(runtime, settings, scheduler, new RequestDeadline(settings, new ShutdownDrain(settings)), snapshots,
                new ConstraintPool(StructuredOutputSettings.DEFAULTS, settings,
                        io.tqserve.constraint.CompileObserver.NONE));
    }

    @Autowired
    GenerationHandler(ServingRuntime runtime, ApiSettings settings, ApiScheduler scheduler,
            RequestDeadline deadline, SnapshotHandler snapshots, ConstraintPool constraintPool) {
        this.constraintPool = constraintPool;
        this.runtime = runtime;
        this.snapshots = snapshots;
        this.settings = settings;
        this.scheduler = scheduler.scheduler();
        this.parser = new RequestParser(runtime.modelConfig().vocabSize(), settings.maxMessages(),
                settings.maxPromptChars());
        this.deadline = deadline;
        this.requestLog = new RequestLog(settings.logPrompts());
    }

    public Mono<ServerResponse> chat(ServerRequest request) {
        return handle(request, Endpoint.CHAT);
    }

    public Mono<ServerResponse> completions(ServerRequest request) {
        return handle(request, Endpoint.COMPLETION);
    }

    private Mono<ServerResponse> handle(ServerRequest request, Endpoint endpoint) {
        return handle(request, endpoint, null);
    }

    /**
     * A protocol translated into chat requests (docs/api.md): its body becomes a chat completion request, which
     * takes the chat path (parsing, template, routing, lanes, prompt cache, structured outputs); its answer is
     * written by the translator's {@link WireOutput}, and its errors name the protocol's own fields.
     */
    Mono<ServerResponse> translated(ServerRequest request, Endpoint endpoint, Translator translator) {
        return handle(request, endpoint, translator).onErrorMap(ApiException.class, translator::rename);
    }

    /** What {@link #translated} needs of a protocol. */
    interface Translator {
        /** The request as a chat completion request body (a 400 for what the protocol refuses). */
        JsonNode chatBody(JsonNode body, String tenant);

        /** The answer of one response, whose request was {@code body}. */
        WireOutput output(JsonNode body, String tenant, String id, String model, PromptBuilder.Prepared prepared);

        /** The same error naming the protocol's field instead of the chat request's. */
        ApiException rename(ApiException e);
    }

    private Mono<ServerResponse> handle(ServerRequest request, Endpoint endpoint, Translator translator) {
        long arrival = System.nanoTime();
        String laneHeader = request.headers().firstHeader(LANE_HEADER);
        return Mono.defer(() -> {
            ServingRuntime.Loaded loaded = Readiness.require(runtime, settings);
            PromptBuilder builder = new PromptBuilder(structuredOutput(loaded.model()), settings);
            String tenant = Tenant.of(request.exchange());
            AtomicReference<String> cacheNamespace = new AtomicReference<>(tenant);
            java.util.concurrent.atomic.AtomicBoolean speculative = new java.util.concurrent.atomic.AtomicBoolean(true);
            AtomicReference<JsonNode> original = new AtomicReference<>();
            return Json.body(request)
                    .map(body -> {
                        JsonNode json = Json.read(body);
                        original.set(json);
                        ParsedRequest parsed = translator == null ? parser.parse(json, endpoint, laneHeader)
                                : parser.parse(translator.chatBody(json, tenant), Endpoint.CHAT, laneHeader);
                        cacheNamespace.set(Tenant.cacheNamespace(tenant, json));
                        speculative.set(Speculation.allowed(json));
                        return parsed;
                    })
                    .doOnNext(this::checkModel)
                    .publishOn(scheduler)
                    .map(p -> builder.prepare(p, p.kvSnapshot() == null ? null
                            : snapshots.resolve(p.kvSnapshot(), tenant, loaded.model()))
                            .withCacheNamespace(cacheNamespace.get()).withSpeculative(speculative.get()))
                    .flatMap(p -> constrain(p, builder.structured(), tenant, arrival))
                    .flatMap(p -> respond(p, loaded, arrival, request.exchange().getResponse(),
                            endpoint, translator == null ? null
                                    : (id, model) -> translator.output(original.get(), tenant, id, model, p),
                            builder.structured(), tenant));
        });
    }

    /**
     * The tokens of a translated request's prompt as the chat path renders it (with its tools), without
     * generating: Anthropic's count_tokens.
     */
    Mono<Integer> promptTokens(ServerRequest request, Translator translator) {
        return Mono.defer(() -> {
            ServingRuntime.Loaded loaded = Readiness.require(runtime, settings);
            PromptBuilder builder = new PromptBuilder(structuredOutput(loaded.model()), settings);
            String tenant = Tenant.of(request.exchange());
            return Json.body(request)
                    .map(body -> parser.parse(translator.chatBody(Json.read(body), tenant), Endpoint.CHAT, null))
                    .doOnNext(this::checkModel)
                    .publishOn(scheduler)
                    .map(p -> builder.prepare(p).generation().promptTokens().length);
        }).onErrorMap(ApiException.class, translator::rename);
    }

    /** The constraint cache of the served model, or null before the first chat request (tests). */
    ConstraintCache constraintCache() {
        StructuredOutput s = structured;
        return s == null ? null : s.cache();
    }

    /** The served model's constraint cache (a new one when the runtime serves another model). */
    private StructuredOutput structuredOutput(io.tqserve.model.Model model) {
        StructuredOutput s = structured;
        if (s == null || s.model() != model) {
            s = new StructuredOutput(model, constraintPool);
            structured = s;
        }
        return s;
    }

    private void checkModel(ParsedRequest r) {
        if (settings.strictModelId() && r.model() != null && !r.model().equals(runtime.modelId())) {
            throw new ApiException(HttpStatus.NOT_FOUND, "invalid_request_error", "model", "model_not_found",
                    "The model `" + r.model() + "` does not exist; this server serves `" + runtime.modelId() + "`",
                    null);
        }
    }

    /**
     * The request with its output constraint compiled, when it needs one: awaited without holding a thread (the
     * compile runs on the {@link ConstraintPool}), ended at the request deadline, cancelled with the request.
     */
    private Mono<PromptBuilder.Prepared> constrain(PromptBuilder.Prepared p, StructuredOutput structured,
            String tenant, long arrival) {
        if (!p.plan().awaitsConstraint()) {
            return Mono.just(p);
        }
        return deadline.boundWait(structured.constrain(p.plan(), tenant, p.generation().params().maxTokens()),
                        arrival)
                .publishOn(scheduler) // the compile completes on a compile thread
                .map(p::with);
    }

    private Mono<ServerResponse> respond(PromptBuilder.Prepared p, ServingRuntime.Loaded loaded, long arrival,
            ServerHttpResponse response, Endpoint endpoint, java.util.function.BiFunction<String, String, WireOutput>
                    wire, StructuredOutput structured, String tenant) {
        ParsedRequest r = p.request();
        GenerationRequest gen = p.generation();
        RouteDecision decision;
        try {
            java.util.Optional<io.tqserve.engine.Lane.Kind> override = r.lane();
            if (gen.resumeFrom() != null) {
                // a snapshot continues on the lane whose KV scheme wrote it
                override = loaded.routing().lanes().stream()
                        .filter(l -> l.scheme().equals(gen.resumeFrom().scheme())).map(io.tqserve.engine.Lane::kind)
                        .findFirst().or(() -> {
                            throw ApiException.invalid("tqserve_kv_snapshot", "snapshot_scheme_not_served",
                                    "the snapshot holds a " + gen.resumeFrom().scheme().id()
                                            + " KV cache and no enabled lane uses that scheme");
                        });
            }
            decision = loaded.routing().route(new RouteRequest(gen.worstCaseTokens(), override));
        } catch (NoLaneFitsException e) {
            throw ApiException.invalid(r.endpoint() == Endpoint.CHAT ? "max_completion_tokens" : "max_tokens",
                    "kv_budget_exceeded", e.getMessage());
        }
        // On the exchange itself, so that errors after this point (a full queue) carry them too.
        HttpHeaders responseHeaders = response.getHeaders();
        responseHeaders.set(LANE_HEADER, decision.lane().kind().wireName());
        responseHeaders.set(REASON_HEADER, decision.reason().wireName());
        Flux<GenerationEvent> events;
        try {
            events = decision.lane().submit(gen);
        } catch (LaneRejectedException e) {
            throw switch (e.reason()) {
                case QUEUE_FULL -> settings.queueFull(e.getMessage());
                case TOO_LARGE -> ApiException.invalid(r.promptParam(), "kv_budget_exceeded", e.getMessage());
                case CLOSED -> new ApiException(HttpStatus.SERVICE_UNAVAILABLE, "service_unavailable", null,
                        "shutting_down", e.getMessage(), settings.retryAfter());
            };
        }
        loaded.routing().observer().endpoint(decision.lane().kind(), endpoint.wireName());
        // admitted: only now may its constraint stay in the tenant's cache
        structured.admit(p.plan(), tenant);
        // A stream runs on its connection's event loop (ResponseLoop: one thread for every signal of the frame
        // pipeline); a collected body needs no such thread.
        Scheduler loop = r.stream() ? ResponseLoop.of(response) : null;
        events = (loop == null ? deadline.bound(events, arrival) : deadline.bound(events.publishOn(loop), arrival, loop))
                .doFinally(s -> structured.ended(p.plan(), tenant));
        RequestTiming timing = new RequestTiming(loaded.routing().observer(), decision.lane().kind(), arrival,
                System.nanoTime());
        String id = endpoint.idPrefix() + HexFormat.of().formatHex(randomBytes());
        requestLog.routed(id, r, gen, decision, () -> loaded.model().tokenizer().decode(gen.promptTokens()));
        long created = System.currentTimeMillis() / 1000;
        String model = r.model() != null ? r.model() : runtime.modelId();
        String fingerprint = "fp_" + loaded.model().fingerprint().substring(0, 10);
        ServerResponse.BodyBuilder ok = ServerResponse.ok();
        if (wire != null) {
            return translatedResponse(wire.apply(id, model), loop, events, timing, ok);
        }
        if (r.stream()) {
            StreamEncoder enc = new StreamEncoder(r.endpoint(), id, created, model, fingerprint, r.includeUsage(),
                    r.logprobs(), loaded.model().tokenizer(), p.plan().parser());
            Flux<String> frames = frames(enc, p.echoText(), events, timing, loop);
            BodyInserter<Flux<String>, ReactiveHttpOutputMessage> body = (out, ctx) -> out.writeAndFlushWith(
                    frames.map(f -> Mono.just(out.bufferFactory().wrap(f.getBytes(StandardCharsets.UTF_8)))));
            return ok.contentType(EVENT_STREAM).header("Cache-Control", "no-cache")
                    .header("X-Accel-Buffering", "no").body(body);
        }
        ResponseAssembler asm = new ResponseAssembler(r.endpoint(), id, created, model, fingerprint, r.logprobs(),
                loaded.model().tokenizer(), p.echoText(), p.plan().parser());
        return events.doOnNext(timing::on)
                .collectList()
                .publishOn(scheduler)
                .map(all -> {
                    all.forEach(asm::on);
                    if (asm.failure() != null) {
                        throw deadline.toApiException(asm.failure());
                    }
                    return asm.json();
                })
                .doFinally(s -> timing.end())
                .flatMap(json -> ok.contentType(MediaType.APPLICATION_JSON)
                        .bodyValue(json.getBytes(StandardCharsets.UTF_8)));
    }

    /**
     * The SSE frames of one stream: the encoder's frames, then [DONE]; merged with keep-alive comments that are
     * sent whenever nothing else was sent for a keep-alive interval (long queueing or prefill). The merge ends at
     * [DONE], so no comment can follow it. Subscribed, ticked and fed on {@code loop} (the events are published
     * onto it), like the demand of the writer below it.
     */
    private Flux<String> frames(StreamEncoder enc, String echoText, Flux<GenerationEvent> events,
            RequestTiming timing, Scheduler loop) {
        AtomicLong lastFrame = new AtomicLong(System.nanoTime());
        long every = settings.keepAliveInterval().toNanos();
        Flux<String> main = Flux.concat(
                Flux.fromIterable(enc.start(echoText)),
                events.doOnNext(timing::on)
                        .concatMapIterable(e -> e instanceof GenerationEvent.Failed f
                                ? List.of(errorFrame(deadline.toApiException(f))) : enc.on(e))
                        .onErrorResume(e -> Flux.just(enc.error("generation failed: " + e.getMessage(),
                                "server_error"))),
                Flux.just(StreamEncoder.DONE));
        Flux<String> keepAlive = Flux.interval(settings.keepAliveInterval(), loop)
                .onBackpressureDrop() // a client that stops reading must not make the timer fail the stream
                .filter(tick -> System.nanoTime() - lastFrame.get() >= every)
                .map(tick -> StreamEncoder.KEEP_ALIVE);
        return Flux.merge(main, keepAlive)
                .doOnNext(f -> lastFrame.set(System.nanoTime()))
                .takeUntil(f -> f == StreamEncoder.DONE)
                .doFinally(s -> timing.end())
                .subscribeOn(loop);
    }

    /** The answer of a translated request: its output's SSE frames (on {@code loop}), or its JSON body (null loop). */
    private Mono<ServerResponse> translatedResponse(WireOutput out, Scheduler loop, Flux<GenerationEvent> events,
            RequestTiming timing, ServerResponse.BodyBuilder ok) {
        if (loop != null) {
            AtomicLong lastFrame = new AtomicLong(System.nanoTime());
            long every = settings.keepAliveInterval().toNanos();
            String end = new String(); // a marker compared by identity: the merge with keep-alives ends there
            Flux<String> main = Flux.concat(
                    Flux.fromIterable(out.start()),
                    events.doOnNext(timing::on)
                            .concatMapIterable(e -> e instanceof GenerationEvent.Failed f
                                    ? out.failure(deadline.toApiException(f)) : out.on(e))
                            .onErrorResume(e -> Flux.fromIterable(out.failure(new ApiException(
                                    HttpStatus.INTERNAL_SERVER_ERROR, "server_error", null, null,
                                    "generation failed: " + e.getMessage(), null)))),
                    Flux.just(end));
            Flux<String> keepAlive = Flux.interval(settings.keepAliveInterval(), loop)
                    .onBackpressureDrop()
                    .filter(tick -> System.nanoTime() - lastFrame.get() >= every)
                    .map(tick -> out.keepAlive());
            Flux<String> frames = Flux.merge(main, keepAlive)
                    .doOnNext(f -> lastFrame.set(System.nanoTime()))
                    .takeUntil(f -> f == end)
                    .filter(f -> f != end)
                    .doFinally(s -> timing.end())
                    .subscribeOn(loop);
            BodyInserter<Flux<String>, ReactiveHttpOutputMessage> body = (o, ctx) -> o.writeAndFlushWith(
                    frames.map(f -> Mono.just(o.bufferFactory().wrap(f.getBytes(StandardCharsets.UTF_8)))));
            return ok.contentType(EVENT_STREAM).header("Cache-Control", "no-cache")
                    .header("X-Accel-Buffering", "no").body(body);
        }
        return events.doOnNext(timing::on)
                .collectList()
                .publishOn(scheduler)
                .map(all -> {
                    for (GenerationEvent e : all) {
                        if (e instanceof GenerationEvent.Failed f) {
                            throw deadline.toApiException(f);
                        }
                    }
                    return out.body(all);
                })
                .doFinally(s -> timing.end())
                .flatMap(json -> ok.contentType(MediaType.APPLICATION_JSON)
                        .bodyValue(json.getBytes(StandardCharsets.UTF_8)));
    }

    private static String errorFrame(ApiException e) {
        return StreamEncoder.frame(ErrorBody.of(e.getMessage(), e.type(), e.param(), e.code()));
    }

    private static byte[] randomBytes() {
        byte[] b = new byte[12];
        ThreadLocalRandom.current().nextBytes(b);
        return b;
    }
}
