package io.tqserve.api;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.stereotype.Component;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The API's own worker threads ("tqserve-api-*"): chat-template rendering, tokenization and JSON encoding of
 * lane events happen here, never on the Netty event loop, a lane thread or the common ForkJoinPool.
 */
@Component
public final class ApiScheduler implements DisposableBean {
    private final Scheduler scheduler = Schedulers.newBoundedElastic(
            Math.max(4, 2 * Runtime.getRuntime().availableProcessors()), 100_000, "tqserve-api", 60, true);

    public Scheduler scheduler() {
        return scheduler;
    }

    @Override
    public void destroy() {
        scheduler.dispose();
    }
}
