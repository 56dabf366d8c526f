package io.tqserve.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.tqserve.constraint.CompileObserver;
import io.tqserve.constraint.ConstraintLimits;
import io.tqserve.constraint.Grammar;
import io.tqserve.constraint.TokenConstraint;
import io.tqserve.constraint.Vocabulary;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpStatus;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * The compile pool and the per-tenant cache, white-box: single flight, cancellation when the last waiter leaves
 * (the compile thread is interrupted), the time budget, the bounded queue, the byte bound, admitted-only entries
 * and tenant separation.
 */
class ConstraintCacheTest {
    static final Duration WAIT = Duration.ofSeconds(30);
    static final Vocabulary VOCABULARY = vocabulary();

    /** Counts what the pool and cache report. */
    static final class Recorder implements CompileObserver {
        final Map<Outcome, AtomicInteger> ended = new ConcurrentHashMap<>();
        final Map<Lookup, AtomicInteger> lookups = new ConcurrentHashMap<>();
        final AtomicLong maxCacheBytes = new AtomicLong();
        final CountDownLatch anyEnded = new CountDownLatch(1);

        @Override
        public void lookup(Lookup lookup) {
            lookups.computeIfAbsent(lookup, k -> new AtomicInteger()).incrementAndGet();
        }

        @Override
        public void ended(Outcome outcome, long nanos) {
            ended.computeIfAbsent(outcome, k -> new AtomicInteger()).incrementAndGet();
            anyEnded.countDown();
        }

        @Override
        public void cache(long bytes, int entries) {
            maxCacheBytes.accumulateAndGet(bytes, Math::max);
        }

        int ended(Outcome o) {
            AtomicInteger n = ended.get(o);
            return n == null ? 0 : n.get();
        }

        int lookups(Lookup l) {
            AtomicInteger n = lookups.get(l);
            return n == null ? 0 : n.get();
        }
    }

    final Recorder recorder = new Recorder();
    final List<ConstraintPool> pools = new ArrayList<>();

    @AfterEach
    void close() {
        pools.forEach(ConstraintPool::destroy);
    }

    static Vocabulary vocabulary() {
        byte[][] t = new byte[257][];
        for (int b = 0; b < 256; b++) {
            t[b] = new byte[] {(byte) b};
        }
        return new Vocabulary(t);
    }

    /** A real compiled constraint: the JSON string literal of {@code text}. */
    static TokenConstraint constraint(String text) {
        return new TokenConstraint(Grammar.literal("\"" + text + "\""), VOCABULARY);
    }

    ConstraintCache cache(int threads, int queue, long bytes, Duration timeout) {
        ApiSettings api = new ApiSettings(List.of(), false, 512, Duration.ofSeconds(5), Duration.ofSeconds(1));
        ConstraintPool pool = new ConstraintPool(new StructuredOutputSettings(threads, queue, bytes, timeout,
                ConstraintLimits.DEFAULT, true), api,
                recorder);
        pools.add(pool);
        return new ConstraintCache(pool);
    }

    ConstraintCache cache() {
        return cache(2, 8, 1L << 30, Duration.ofSeconds(60));
    }

    /** A compile that blocks until released, or until its thread is interrupted (then it records that). */
    static final class Blocking implements Callable<TokenConstraint> {
        final CountDownLatch started = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final CountDownLatch interrupted = new CountDownLatch(1);
        final AtomicInteger calls = new AtomicInteger();
        final TokenConstraint result;

        Blocking(TokenConstraint result) {
            this.result = result;
        }

        @Override
        public TokenConstraint call() throws InterruptedException {
            calls.incrementAndGet();
            started.countDown();
            try {
                if (!release.await(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                    throw new IllegalStateException("never released");
                }
            } catch (InterruptedException e) {
                interrupted.countDown();
                throw e;
            }
            return result;
        }
    }

    static boolean await(CountDownLatch latch) throws InterruptedException {
        return latch.await(WAIT.toSeconds(), TimeUnit.SECONDS);
    }

    @Test
    void concurrentRequestsForOneConstraintShareOneCompile() throws Exception {
        ConstraintCache cache = cache();
        Blocking compile = new Blocking(constraint("a"));
        ConstraintCache.Key key = new ConstraintCache.Key("t1", "schema");
        var first = cache.get(key, compile, "response_format").toFuture();
        var second = cache.get(key, compile, "response_format").toFuture();
        assertThat(await(compile.started)).isTrue();
        compile.release.countDown();
        assertThat(first.get(30, TimeUnit.SECONDS)).isSameAs(second.get(30, TimeUnit.SECONDS))
                .isSameAs(compile.result);
        assertThat(compile.calls).hasValue(1);
        assertThat(recorder.lookups(CompileObserver.Lookup.MISS)).isEqualTo(1);
        assertThat(recorder.lookups(CompileObserver.Lookup.SHARED)).isEqualTo(1);
        assertThat(await(recorder.anyEnded)).isTrue(); // reported just after the result
        assertThat(recorder.ended(CompileObserver.Outcome.COMPILED)).isEqualTo(1);
    }

    @Test
    void aCompileIsCachedOnlyOnceItsRequestIsAdmitted() {
        ConstraintCache cache = cache();
        ConstraintCache.Key key = new ConstraintCache.Key("t1", "schema");
        TokenConstraint c = cache.get(key, () -> constraint("b"), "response_format").block(WAIT);
        assertThat(cache.contains(key)).isFalse();
        assertThat(cache.size()).isZero();
        // not admitted (refused by max_tokens or routing): the next request compiles again
        assertThat(cache.get(key, () -> constraint("b"), "response_format").block(WAIT)).isNotSameAs(c);
        assertThat(recorder.lookups(CompileObserver.Lookup.MISS)).isEqualTo(2);
        cache.admit(key, c);
        assertThat(cache.contains(key)).isTrue();
        assertThat(cache.bytes()).isEqualTo(ConstraintCache.sizeOf(c)).isPositive();
        assertThat(cache.get(key, () -> {
            throw new AssertionError("compiled again");
        }, "response_format").block(WAIT)).isSameAs(c);
        assertThat(recorder.lookups(CompileObserver.Lookup.HIT)).isEqualTo(1);
    }

    @Test
    void twoTenantsNeverShareAnEntryNorACompile() throws Exception {
        ConstraintCache cache = cache();
        ConstraintCache.Key a = new ConstraintCache.Key("tenant-a", "schema");
        ConstraintCache.Key b = new ConstraintCache.Key("tenant-b", "schema");
        Blocking ca = new Blocking(constraint("c"));
        Blocking cb = new Blocking(constraint("c"));
        var fa = cache.get(a, ca, "response_format").toFuture();
        var fb = cache.get(b, cb, "response_format").toFuture();
        ca.release.countDown();
        cb.release.countDown();
        cache.admit(a, fa.get(30, TimeUnit.SECONDS));
        assertThat(fb.get(30, TimeUnit.SECONDS)).isNotSameAs(fa.get());
        assertThat(ca.calls).hasValue(1);
        assertThat(cb.calls).hasValue(1);
        assertThat(cache.contains(a)).isTrue();
        assertThat(cache.contains(b)).isFalse();
        Blocking again = new Blocking(constraint("c"));
        again.release.countDown();
        assertThat(cache.get(b, again, "response_format").block(WAIT)).isNotSameAs(fa.get());
        assertThat(again.calls).hasValue(1);
    }

    @Test
    void theLastWaiterLeavingInterruptsTheCompile() throws Exception {
        ConstraintCache cache = cache();
        Blocking compile = new Blocking(constraint("d"));
        ConstraintCache.Key key = new ConstraintCache.Key("t1", "schema");
        Disposable one = cache.get(key, compile, "response_format").subscribe();
        Disposable two = cache.get(key, compile, "response_format").subscribe();
        assertThat(await(compile.started)).isTrue();
        one.dispose();
        assertThat(compile.interrupted.getCount()).as("another request still waits").isEqualTo(1);
        assertThat(cache.inFlight()).isEqualTo(1);
        two.dispose();
        assertThat(await(compile.interrupted)).as("the compile thread was interrupted").isTrue();
        assertThat(await(recorder.anyEnded)).isTrue();
        assertThat(recorder.ended(CompileObserver.Outcome.CANCELLED)).isEqualTo(1);
        assertThat(cache.inFlight()).isZero();
        assertThat(cache.size()).isZero();
    }

    @Test
    void theRequestDeadlineEndsTheWaitWith504AndInterruptsTheCompile() throws Exception {
        ConstraintCache cache = cache();
        ApiSettings api = new ApiSettings(List.of(), false, 512, Duration.ofSeconds(5), Duration.ofSeconds(1),
                Duration.ofMillis(300), Duration.ofSeconds(1), false, 10, 1000, List.of(), List.of());
        RequestDeadline deadline = new RequestDeadline(api, new ShutdownDrain(api));
        Blocking compile = new Blocking(constraint("l"));
        Mono<TokenConstraint> wait = deadline.boundWait(cache.get(new ConstraintCache.Key("t", "slow"), compile,
                "response_format"), System.nanoTime());
        assertThatThrownBy(() -> wait.block(WAIT)).isInstanceOfSatisfying(ApiException.class, e -> {
            assertThat(e.status()).isEqualTo(HttpStatus.GATEWAY_TIMEOUT);
            assertThat(e.code()).isEqualTo("request_timeout");
        });
        assertThat(await(compile.interrupted)).as("the compile thread was interrupted").isTrue();
        assertThat(await(recorder.anyEnded)).isTrue();
        assertThat(recorder.ended(CompileObserver.Outcome.CANCELLED)).isEqualTo(1);
    }

    @Test
    void aQueuedCompileThatNobodyWaitsForNeverRuns() throws Exception {
        ConstraintCache cache = cache(1, 4, 1L << 30, Duration.ofSeconds(60));
        Blocking running = new Blocking(constraint("e"));
        Disposable first = cache.get(new ConstraintCache.Key("t", "one"), running, "response_format").subscribe();
        assertThat(await(running.started)).isTrue();
        Blocking queued = new Blocking(constraint("f"));
        Disposable second = cache.get(new ConstraintCache.Key("t", "two"), queued, "response_format").subscribe();
        second.dispose();
        assertThat(recorder.ended(CompileObserver.Outcome.CANCELLED)).isEqualTo(1);
        running.release.countDown();
        first.dispose();
        // the thread is free again: a third compile runs, the cancelled one never did
        assertThat(cache.get(new ConstraintCache.Key("t", "three"), () -> constraint("g"), "response_format")
                .block(WAIT)).isNotNull();
        assertThat(queued.calls).hasValue(0);
    }

    @Test
    void aCompileOverItsTimeBudgetIsInterruptedAndRefusedWith400() throws Exception {
        ConstraintCache cache = cache(1, 4, 1L << 30, Duration.ofMillis(200));
        Blocking compile = new Blocking(constraint("h"));
        Mono<TokenConstraint> m = cache.get(new ConstraintCache.Key("t", "slow"), compile, "tools");
        assertThatThrownBy(() -> m.block(WAIT)).isInstanceOfSatisfying(ApiException.class, e -> {
            assertThat(e.status()).isEqualTo(HttpStatus.BAD_REQUEST);
            assertThat(e.code()).isEqualTo("schema_too_complex");
            assertThat(e.param()).isEqualTo("tools");
            assertThat(e.getMessage()).contains("200 ms", "tqserve.structured-output.compile-timeout");
        });
        assertThat(await(compile.interrupted)).isTrue();
        assertThat(await(recorder.anyEnded)).isTrue();
        assertThat(recorder.ended(CompileObserver.Outcome.TIMEOUT)).isEqualTo(1);
    }

    @Test
    void aSchemaBeyondACompileBudgetIsA400NamingTheKeyword() {
        ConstraintCache cache = cache();
        Mono<TokenConstraint> m = cache.get(new ConstraintCache.Key("t", "big"), () -> {
            throw new io.tqserve.constraint.ConstraintBudgetException("enum", "20000 values");
        }, "response_format");
        assertThatThrownBy(() -> m.block(WAIT)).isInstanceOfSatisfying(ApiException.class, e -> {
            assertThat(e.status()).isEqualTo(HttpStatus.BAD_REQUEST);
            assertThat(e.code()).isEqualTo("schema_too_complex");
            assertThat(e.param()).isEqualTo("response_format");
            assertThat(e.getMessage()).contains("'enum'");
        });
        Mono<TokenConstraint> u = cache.get(new ConstraintCache.Key("t", "odd"), () -> {
            throw new io.tqserve.constraint.UnsupportedSchemaException("patternProperties", "not supported");
        }, "tools");
        assertThatThrownBy(() -> u.block(WAIT)).isInstanceOfSatisfying(ApiException.class, e -> {
            assertThat(e.code()).isEqualTo("unsupported_schema");
            assertThat(e.param()).isEqualTo("tools");
        });
        assertThat(cache.size()).isZero();
    }

    @Test
    void aFullCompileQueueIsRefusedWithTheQueueFullAnswer() throws Exception {
        ConstraintCache cache = cache(1, 1, 1L << 30, Duration.ofSeconds(60));
        Blocking running = new Blocking(constraint("i"));
        Blocking queued = new Blocking(constraint("j"));
        Disposable a = cache.get(new ConstraintCache.Key("t", "a"), running, "response_format").subscribe();
        assertThat(await(running.started)).isTrue();
        Disposable b = cache.get(new ConstraintCache.Key("t", "b"), queued, "response_format").subscribe();
        assertThatThrownBy(() -> cache.get(new ConstraintCache.Key("t", "c"), () -> constraint("k"),
                "response_format").block(WAIT)).isInstanceOfSatisfying(ApiException.class, e -> {
                    assertThat(e.status()).isEqualTo(HttpStatus.TOO_MANY_REQUESTS);
                    assertThat(e.code()).isEqualTo("queue_full");
                    assertThat(e.getMessage()).contains("tqserve.structured-output.compile-queue");
                });
        assertThat(recorder.ended(CompileObserver.Outcome.REJECTED)).isEqualTo(1);
        running.release.countDown();
        queued.release.countDown();
        a.dispose();
        b.dispose();
    }

    @Test
    void theCacheNeverHoldsMoreThanItsByteBound() {
        TokenConstraint probe = constraint("0123456789");
        long each = ConstraintCache.sizeOf(probe);
        long bound = each * 3 + each / 2;
        ConstraintCache cache = cache(2, 8, bound, Duration.ofSeconds(60));
        List<ConstraintCache.Key> keys = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            ConstraintCache.Key key = new ConstraintCache.Key(i % 2 == 0 ? "a" : "b", "schema-" + i);
            keys.add(key);
            cache.admit(key, constraint(String.format("%010d", i)));
            assertThat(cache.bytes()).isLessThanOrEqualTo(bound);
        }
        assertThat(cache.size()).isEqualTo(3);
        assertThat(recorder.maxCacheBytes.get()).isLessThanOrEqualTo(bound);
        // least recently used out first: the last three stay
        assertThat(keys.subList(7, 10)).allMatch(cache::contains);
        assertThat(keys.subList(0, 7)).noneMatch(cache::contains);
        // an entry larger than the whole bound is not kept
        ConstraintCache small = cache(1, 1, each - 1, Duration.ofSeconds(60));
        small.admit(new ConstraintCache.Key("a", "big"), probe);
        assertThat(small.size()).isZero();
        assertThat(small.bytes()).isZero();
    }
}
