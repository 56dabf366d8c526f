package io.tqserve.api;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.SmartLifecycle;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.HttpStatus;
import org.springframework.stereotype.Component;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

/**
 * Graceful shutdown of the API. When the application context closes, Spring Boot first marks readiness
 * REFUSING_TRAFFIC (the readiness probe answers 503); then, before Spring's own graceful web-server shutdown
 * phase, this lifecycle bean stops:
 * <ol>
 *   <li>every new API request is answered 503 {@code shutting_down} with {@code Retry-After} (actuator paths
 *       still answer, so probes see the state);</li>
 *   <li>requests already running — streams included — may finish for up to {@code tqserve.api.shutdown-grace-period};</li>
 *   <li>those still running then are ended: a stream gets one error event ({@code "code": "shutting_down"}) and
 *       {@code [DONE]}, a non-streamed request a 503; their sequences are cancelled, which frees their KV memory
 *       at the lane's next step. The stop waits (at most {@link #FLUSH_WAIT}) until those responses are written.</li>
 * </ol>
 * After it, Spring's graceful shutdown finds no request running, the model loader closes the lanes and the web
 * server stops. The phase's timeout ({@code spring.lifecycle.timeout-per-shutdown-phase}) must exceed the grace
 * period plus {@link #FLUSH_WAIT}.
 */
@Component
@Order(Ordered.HIGHEST_PRECEDENCE + 20)
public final class ShutdownDrain implements WebFilter, SmartLifecycle {
    /** How long ended responses get to be written after the grace period. */
    static final Duration FLUSH_WAIT = Duration.ofSeconds(3);
    private static final Logger log = LoggerFactory.getLogger(ShutdownDrain.class);

    private final ApiSettings settings;
    private volatile Sinks.Empty<Void> shutdown = Sinks.empty();
    private final Object lock = new Object();
    private int inFlight;          // API requests whose response has not ended; guarded by lock
    private volatile boolean draining;
    private volatile boolean running;

    public ShutdownDrain(ApiSettings settings) {
        this.settings = settings;
    }

    /** True from the start of shutdown: new API requests are refused. */
    public boolean draining() {
        return draining;
    }

    /** API requests whose responses have not ended yet. */
    public int inFlight() {
        synchronized (lock) {
            return inFlight;
        }
    }

    /** Completes when running requests are to be ended (the grace period is over). */
    Mono<Void> endRunning() {
        return shutdown.asMono();
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        if (exchange.getRequest().getPath().pathWithinApplication().value().startsWith(ApiKeyFilter.ACTUATOR + "/")) {
            return chain.filter(exchange);
        }
        if (draining) {
            return Mono.error(refused());
        }
        return Mono.defer(() -> {
            synchronized (lock) {
                inFlight++;
            }
            return chain.filter(exchange);
        }).doFinally(s -> {
            synchronized (lock) {
                inFlight--;
                lock.notifyAll();
            }
        });
    }

    private ApiException refused() {
        return new ApiException(HttpStatus.SERVICE_UNAVAILABLE, "service_unavailable", null, "shutting_down",
                "the server is shutting down; retry on another instance", settings.retryAfter());
    }

    /**
     * (Re)starts accepting requests. A context can be stopped and started again without closing (Spring's test
     * framework pauses cached contexts that way), so a past drain must not outlive a restart.
     */
    @Override
    public void start() {
        shutdown = Sinks.empty();
        draining = false;
        running = true;
    }

    @Override
    public void stop() {
        drain();
    }

    @Override
    public void stop(Runnable callback) {
        Thread.ofPlatform().name("tqserve-shutdown-drain").daemon(true).start(() -> {
            try {
                drain();
            } finally {
                callback.run();
            }
        });
    }

    private void drain() {
        if (!running) {
            return;
        }
        draining = true;
        int left = awaitIdle(settings.shutdownGracePeriod());
        if (left > 0) {
            log.warn("tqserve: {} request(s) still running after the shutdown grace period of {} ms; ending them",
                    left, settings.shutdownGracePeriod().toMillis());
            shutdown.tryEmitEmpty();
            left = awaitIdle(FLUSH_WAIT);
            if (left > 0) {
                log.warn("tqserve: {} response(s) not finished {} ms after they were ended", left, FLUSH_WAIT.toMillis());
            }
        }
        running = false;
    }

    /** Waits until no request is in flight or the time is up; returns how many are left. */
    private int awaitIdle(Duration max) {
        long deadline = System.nanoTime() + max.toNanos();
        synchronized (lock) {
            while (inFlight > 0) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    break;
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(lock, left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            return inFlight;
        }
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    /** Stops before Spring Boot's graceful web-server shutdown (which waits for the connections we end here). */
    @Override
    public boolean isPauseable() {
        return false; // a paused (test-cached) context is not a shutdown: keep the model, lanes and admission as they are
    }

    @Override
    public int getPhase() {
        return WebServerApplicationContext.GRACEFUL_SHUTDOWN_PHASE + 512;
    }
}
