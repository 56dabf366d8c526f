package io.tqserve.api;

import io.tqserve.engine.FinishReason;
import io.tqserve.engine.Lane;
import io.tqserve.engine.LaneObserver;
import io.tqserve.routing.RequestObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

/**
 * A test observer registered beside the metrics: records every sequence that leaves a lane (after its KV memory
 * was freed) and every response that ended, so tests wait for those events instead of sleeping.
 */
@TestConfiguration(proxyBeanMethods = false)
class LaneProbe {

    @Bean
    Recorder laneProbeRecorder() {
        return new Recorder();
    }

    /** One sequence that left a lane. */
    record Ended(Lane.Kind lane, FinishReason reason, int promptTokens, int completionTokens) {
    }

    static final class Recorder implements LaneObserver, RequestObserver {
        private final List<Ended> ended = new ArrayList<>();
        private int completedResponses;
        private final java.util.Set<String> tokenThreads = new java.util.TreeSet<>();

        /** Threads that handled streamed or collected tokens (inter-token times) since {@link #clearTokenThreads}. */
        synchronized java.util.Set<String> tokenThreads() {
            return new java.util.TreeSet<>(tokenThreads);
        }

        synchronized void clearTokenThreads() {
            tokenThreads.clear();
        }

        @Override
        public synchronized void interToken(Lane.Kind lane, long nanos) {
            tokenThreads.add(Thread.currentThread().getName());
        }

        @Override
        public synchronized void sequenceEnded(Lane lane, FinishReason reason, int prompt, int completion) {
            ended.add(new Ended(lane.kind(), reason, prompt, completion));
            notifyAll();
        }

        @Override
        public synchronized void completed(Lane.Kind lane, long e2eNanos) {
            completedResponses++;
            notifyAll();
        }

        /** Waits until {@code count} recorded sequences match; returns them. */
        synchronized List<Ended> awaitEnded(Predicate<Ended> match, int count) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (true) {
                List<Ended> hits = ended.stream().filter(match).toList();
                if (hits.size() >= count) {
                    return hits;
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new AssertionError("only " + hits.size() + " of " + count + " sequences ended: " + ended);
                }
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
        }

        synchronized int completedResponses() {
            return completedResponses;
        }

        /** Waits until more than {@code seen} responses have ended. */
        synchronized void awaitCompletedResponses(int atLeast) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (completedResponses < atLeast) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new AssertionError("only " + completedResponses + " responses ended");
                }
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
        }
    }
}
