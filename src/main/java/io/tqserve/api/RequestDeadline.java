package io.tqserve.api;

import io.tqserve.engine.GenerationEvent;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.springframework.http.HttpStatus;
import org.springframework.stereotype.Component;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * Ends a generation that runs too long ({@code tqserve.api.request-timeout}, counted from the request's arrival,
 * so queueing counts) or is still running when the shutdown grace period is over ({@link ShutdownDrain}). The
 * lane's events are cut there: the cut cancels the lane's Flux, which cancels the sequence (the lane frees its KV
 * memory at its next step), and one {@link GenerationEvent.Failed} takes the place of the rest, which the stream
 * sends as its error event and a non-streamed request answers as 504 or 503 ({@link #toApiException}).
 */
@Component
final class RequestDeadline {
    /** {@link GenerationEvent.Failed#type()} of a request that ran past the timeout. */
    static final String TIMEOUT = "timeout";
    /** {@link GenerationEvent.Failed#type()} of a request ended by shutdown (ours, and the lanes' own). */
    static final String SHUTTING_DOWN = "shutting_down";
    private static final String LANE_SHUTDOWN = "server_shutdown";

    private final Duration timeout;
    private final Duration retryAfter;
    private final ShutdownDrain drain;

    RequestDeadline(ApiSettings settings, ShutdownDrain drain) {
        this.timeout = settings.requestTimeout();
        this.retryAfter = settings.retryAfter();
        this.drain = drain;
    }

    /** The events of one request, ended by a Failed event at its deadline or at the end of the grace period. */
    Flux<GenerationEvent> bound(Flux<GenerationEvent> events, long arrivalNanos) {
        return bound(events, arrivalNanos, null);
    }

    /**
     * As {@link #bound(Flux, long)}, with the deadline and the shutdown cut signalled on {@code signals} (the
     * thread the events arrive on, for a stream: {@link ResponseLoop}); null: where they happen.
     */
    Flux<GenerationEvent> bound(Flux<GenerationEvent> events, long arrivalNanos, Scheduler signals) {
        Mono<GenerationEvent.Failed> stop = drain.endRunning().then(Mono.fromSupplier(() ->
                new GenerationEvent.Failed("the server is shutting down; the request was ended", SHUTTING_DOWN)));
        if (!timeout.isZero() && !timeout.isNegative()) {
            long left = Math.max(0, timeout.toNanos() - (System.nanoTime() - arrivalNanos));
            Mono<Long> delay = signals == null ? Mono.delay(Duration.ofNanos(left))
                    : Mono.delay(Duration.ofNanos(left), signals);
            stop = Mono.firstWithSignal(stop, delay.map(x -> new GenerationEvent.Failed(
                    "the request did not finish within " + describe(timeout) + " (tqserve.api.request-timeout)",
                    TIMEOUT)));
        }
        if (signals != null) {
            stop = stop.publishOn(signals);
        }
        AtomicReference<GenerationEvent.Failed> cut = new AtomicReference<>();
        AtomicBoolean ended = new AtomicBoolean();
        return events
                .doOnNext(e -> {
                    if (e instanceof GenerationEvent.Finished || e instanceof GenerationEvent.Failed) {
                        ended.set(true);
                    }
                })
                .takeUntilOther(stop.doOnNext(cut::set))
                .concatWith(Mono.fromSupplier(() -> ended.get() ? null : cut.get()));
    }

    /**
     * A wait before the request reaches a lane (a constraint compile) ended at the request's deadline: the wait is
     * cancelled there and the request answered 504 request_timeout.
     */
    <T> Mono<T> boundWait(Mono<T> wait, long arrivalNanos) {
        if (timeout.isZero() || timeout.isNegative()) {
            return wait;
        }
        long left = Math.max(0, timeout.toNanos() - (System.nanoTime() - arrivalNanos));
        return wait.timeout(Duration.ofNanos(left), Mono.error(() -> toApiException(new GenerationEvent.Failed(
                "the request did not finish within " + describe(timeout) + " (tqserve.api.request-timeout)",
                TIMEOUT))));
    }

    /** How a failed generation is answered: status, OpenAI type and code. */
    ApiException toApiException(GenerationEvent.Failed f) {
        return switch (f.type()) {
            case TIMEOUT -> new ApiException(HttpStatus.GATEWAY_TIMEOUT, TIMEOUT, null, "request_timeout", f.message(),
                    null);
            case SHUTTING_DOWN, LANE_SHUTDOWN -> new ApiException(HttpStatus.SERVICE_UNAVAILABLE,
                    "service_unavailable", null, SHUTTING_DOWN, f.message(), retryAfter);
            case GenerationEvent.Failed.SCHEMA_TOO_COMPLEX -> ApiException.invalid(null,
                    GenerationEvent.Failed.SCHEMA_TOO_COMPLEX, f.message());
            default -> new ApiException(HttpStatus.INTERNAL_SERVER_ERROR, f.type(), null, null, f.message(), null);
        };
    }

    private static String describe(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + "s" : d.toMillis() + "ms";
    }
}
