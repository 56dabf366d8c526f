package io.tqserve.api;

import io.tqserve.engine.GenerationEvent;
import io.tqserve.engine.Lane;
import io.tqserve.routing.RequestObserver;

/** Measures one request's queue time, time to first token, inter-token times and end-to-end latency. */
final class RequestTiming {
    private final RequestObserver observer;
    private final Lane.Kind lane;
    private final long arrival;
    private final long submitted;
    private long lastToken;
    private boolean ended;

    RequestTiming(RequestObserver observer, Lane.Kind lane, long arrivalNanos, long submittedNanos) {
        this.observer = observer;
        this.lane = lane;
        this.arrival = arrivalNanos;
        this.submitted = submittedNanos;
    }

    void on(GenerationEvent e) {
        long now = System.nanoTime();
        switch (e) {
            case GenerationEvent.Started s -> observer.started(lane, now - submitted);
            case GenerationEvent.Token t -> {
                if (lastToken == 0) {
                    observer.firstToken(lane, now - arrival);
                } else {
                    observer.interToken(lane, now - lastToken);
                }
                lastToken = now;
            }
            default -> {
            }
        }
    }

    synchronized void end() {
        if (!ended) {
            ended = true;
            observer.completed(lane, System.nanoTime() - arrival);
        }
    }
}
